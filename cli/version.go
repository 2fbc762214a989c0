package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// versionText says what was run, for bug reports: hymn's version, the
// module version and the VCS revision and commit time that go build stamped
// into the binary (with "+modified" when the tree had uncommitted changes),
// and the Go toolchain.
func versionText() string {
	info, ok := debug.ReadBuildInfo()
	return versionFrom(info, ok)
}

// noRevision is the revision line of a binary without VCS stamping (plain
// go build where GOFLAGS=-buildvcs=false, or outside a checkout): it says
// how to get one, since a bug report without a revision is hard to place.
const noRevision = "revision: unknown (built without VCS stamping; use scripts/setup.sh or go build -buildvcs=true)\n"

func versionFrom(info *debug.BuildInfo, ok bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "hymn %s\n", Version)
	if !ok || info == nil {
		b.WriteString(noRevision)
		fmt.Fprintf(&b, "go: %s %s/%s (no build information: built without module support)\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return b.String()
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	fmt.Fprintf(&b, "module: %s %s\n", info.Main.Path, info.Main.Version)
	if rev := settings["vcs.revision"]; rev != "" {
		if settings["vcs.modified"] == "true" {
			rev += "+modified"
		}
		fmt.Fprintf(&b, "revision: %s\n", rev)
		if t := settings["vcs.time"]; t != "" {
			fmt.Fprintf(&b, "committed: %s\n", t)
		}
	} else {
		b.WriteString(noRevision)
	}
	tags := settings["-tags"]
	if tags == "" {
		tags = "none"
	}
	fmt.Fprintf(&b, "go: %s %s/%s, build tags: %s\n", info.GoVersion, settings["GOOS"], settings["GOARCH"], tags)
	return b.String()
}
