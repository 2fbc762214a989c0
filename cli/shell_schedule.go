package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/emulator"
)

func init() {
	shellCommands["schedule"] = shellCommand{
		"Replay timed link changes (docs/schedules.md).\n" +
			"Usage: schedule                                 progress of every schedule\n" +
			"       schedule node1 node2 [a>b|b>a] FILE      run FILE's schedule from now (a is node1)\n" +
			"       schedule stop [node1 node2]              stop all schedules, or one link's\n" +
			"FILE: CSV with a header time,delay,jitter,rate,loss,ramp (any after time) and an\n" +
			"optional last line repeat,PERIOD; or a delay trace of \"ms ms\" lines.",
		(*shell).doSchedule,
	}
}

func (s *shell) doSchedule(_ context.Context, args string) bool {
	f := strings.Fields(args)
	switch {
	case len(f) == 0:
		list := s.net.LinkSchedules()
		if len(list) == 0 {
			s.out("no schedules: schedule node1 node2 FILE starts one\n")
			return false
		}
		var b strings.Builder
		for _, ls := range list {
			WriteScheduleStatus(&b, ls.Node1+"->"+ls.Node2, ls.Forward)
			WriteScheduleStatus(&b, ls.Node2+"->"+ls.Node1, ls.Reverse)
		}
		s.out(b.String())
		return false
	case f[0] == "stop":
		switch len(f) {
		case 1:
			if err := s.net.StopAllSchedules(); err != nil {
				s.outf("%v\n", err)
			}
		case 3:
			if err := s.net.StopLinkSchedule(f[1], f[2], hymn.BothDirections); err != nil {
				s.outf("%v\n", err)
			}
		default:
			s.out("usage: schedule stop [node1 node2]\n")
		}
		return false
	case len(f) < 3 || len(f) > 4:
		s.out("usage: schedule node1 node2 [a>b|b>a] FILE\n")
		return false
	}
	for _, n := range f[:2] {
		if _, err := s.net.Node(n); err != nil {
			s.outf("node '%s' not in network\n", n)
			return false
		}
	}
	dir := hymn.BothDirections
	file := f[2]
	if len(f) == 4 {
		d, err := hymn.ParseDirection(f[2])
		if err != nil || !strings.Contains(f[2], ">") {
			s.outf("schedule: %q is not a direction (a>b or b>a)\n", f[2])
			return false
		}
		dir, file = d, f[3]
	}
	sched, err := emulator.LoadSchedule(file)
	if err != nil {
		s.outf("%v\n", err)
		return false
	}
	if _, err := s.net.SetLinkSchedule(f[0], f[1], dir, sched); err != nil {
		s.outf("%v\n", err)
		return false
	}
	rep := ""
	if sched.Repeat > 0 {
		rep = fmt.Sprintf(", repeating every %v", sched.Repeat)
	}
	s.outf("%s-%s: schedule %s started (%d points over %v%s)\n", f[0], f[1], file, len(sched.Points), sched.Duration(), rep)
	return false
}

// WriteScheduleStatus prints one direction's schedule progress on a line.
func WriteScheduleStatus(w io.Writer, name string, st emulator.ScheduleStatus) {
	if st.Points == 0 {
		return
	}
	state := "running"
	switch {
	case st.Finished:
		state = "finished"
	case !st.Active:
		state = "stopped"
	}
	_, _ = fmt.Fprintf(w, "%s: %s %s, %v elapsed, %d/%d points applied", name, st.Source, state, st.Elapsed.Round(time.Millisecond), st.Applied, st.Points)
	if st.Repeat > 0 {
		_, _ = fmt.Fprintf(w, " (cycle %d of %v)", st.Cycle, st.Repeat)
	}
	if st.Active {
		_, _ = fmt.Fprintf(w, ", next #%d at %v", st.Next, st.NextAt)
	}
	_, _ = fmt.Fprintf(w, ", latest change %v late at most", st.MaxLate)
	if st.Failed > 0 {
		_, _ = fmt.Fprintf(w, ", %d refused (%s)", st.Failed, st.LastErr)
	}
	_, _ = fmt.Fprintln(w)
}
