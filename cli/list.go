package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hymn-net/hymn/internal/owner"
	"github.com/spf13/cobra"
)

// runInfo is one network in `hymn list`.
type runInfo struct {
	Run      string    `json:"run"`
	PID      int       `json:"pid"`
	Alive    bool      `json:"alive"`
	Started  time.Time `json:"started"`
	Topology string    `json:"topology"` // from hymn's command line; "(program)" for other owners
	Nodes    int       `json:"nodes"`    // node namespaces (helpers not counted)
	Command  []string  `json:"command,omitempty"`
}

// topologyOf finds what a hymn command line built: --topo, --custom or
// run's file (Mininet's default topology when none is given).
func topologyOf(args []string) string {
	topoName, custom, file := "", "", ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		val := func(flag string) (string, bool) {
			if v, ok := strings.CutPrefix(a, flag+"="); ok {
				return v, true
			}
			if a == flag && i+1 < len(args) {
				i++
				return args[i], true
			}
			return "", false
		}
		if v, ok := val("--topo"); ok {
			topoName = v
		} else if v, ok := val("--custom"); ok {
			custom = v
		} else if a == "run" && i+1 < len(args) && file == "" {
			file = args[i+1]
		}
	}
	switch {
	case file != "":
		return file
	case custom != "" && topoName != "":
		return custom + ":" + topoName
	case custom != "":
		return custom
	case topoName != "":
		return topoName
	}
	return "minimal"
}

func listRuns() ([]runInfo, error) {
	runs, err := owner.Runs()
	if err != nil {
		return nil, err
	}
	out := []runInfo{}
	for _, run := range runs {
		info := runInfo{Run: run}
		if st, err := owner.ReadState(run); err == nil {
			info.PID, info.Started = st.PID, st.Created
		}
		info.Alive = owner.Alive(run)
		if info.Alive && info.PID > 0 {
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(info.PID) + "/cmdline"); err == nil {
				info.Command = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
			}
		}
		if len(info.Command) > 0 {
			// Only hymn's own command line says what it built; a Go
			// program using the library is named instead.
			switch prog := filepath.Base(info.Command[0]); prog {
			case "hymn", "mn":
				info.Topology = topologyOf(info.Command[1:])
			default:
				info.Topology = "(" + prog + ")"
			}
		}
		names, _ := owner.Namespaces(run)
		for _, ns := range names {
			node := strings.TrimPrefix(ns, owner.Prefix+run+"-")
			if !strings.HasPrefix(node, "@") {
				info.Nodes++
			}
		}
		out = append(out, info)
	}
	return out, nil
}

func newListCmd(stdout io.Writer) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List hymn networks on this machine (run id, pid, start, topology, nodes)",
		Long: `list shows the networks recorded under /run/hymn: their run id, owner pid,
start time, topology (from the owner's command line) and number of nodes.
A run whose owner is gone shows alive=false; hymn clean removes it.`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			runs, err := listRuns()
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					Runs []runInfo `json:"runs"`
				}{runs})
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			_, _ = fmt.Fprintln(tw, "RUN\tPID\tALIVE\tSTARTED\tTOPOLOGY\tNODES")
			for _, r := range runs {
				started := "-"
				if !r.Started.IsZero() {
					started = r.Started.Local().Format(time.DateTime)
				}
				_, _ = fmt.Fprintf(tw, "%s\t%d\t%v\t%s\t%s\t%d\n", r.Run, r.PID, r.Alive, started, r.Topology, r.Nodes)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %v", ErrUsage, err) })
	return cmd
}

// noArgs rejects positional arguments as a usage error (exit 2).
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: %s takes no argument %q", ErrUsage, cmd.CommandPath(), args[0])
	}
	return nil
}
