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
	var b strings.Builder
	fmt.Fprintf(&b, "hymn %s\n", Version)
	info, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Fprintf(&b, "build information: not available (built without module support)\n")
		fmt.Fprintf(&b, "go: %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
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
		fmt.Fprintf(&b, "revision: unknown (built outside a git checkout, or with -buildvcs=false)\n")
	}
	tags := settings["-tags"]
	if tags == "" {
		tags = "none"
	}
	fmt.Fprintf(&b, "go: %s %s/%s, build tags: %s\n", info.GoVersion, settings["GOOS"], settings["GOARCH"], tags)
	return b.String()
}
