package mnlog_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/hymn-net/hymn/mnlog"
)

func TestLevels(t *testing.T) {
	var b bytes.Buffer
	g := mnlog.New(&b, mnlog.Info)
	g.Debugf("hidden %d\n", 1)
	g.Info("*** Adding hosts:\n")
	g.Log(mnlog.Output, "h1", "h2", "\n")
	if got, want := b.String(), "*** Adding hosts:\nh1 h2 \n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	var nilLogger *mnlog.Logger
	nilLogger.Infof("no panic %s", "here") // a nil logger discards
	if nilLogger.Enabled(mnlog.Critical) {
		t.Fatal("a nil logger reports enabled")
	}
}

func TestParseLevel(t *testing.T) {
	for _, name := range mnlog.LevelNames {
		t.Run(name, func(t *testing.T) {
			if _, err := mnlog.ParseLevel(name); err != nil {
				t.Fatal(err)
			}
		})
	}
	if _, err := mnlog.ParseLevel("loud"); err == nil {
		t.Fatal("ParseLevel(loud) accepted")
	}
}

func ExampleNew() {
	log := mnlog.New(os.Stdout, mnlog.Info)
	log.Info("*** Creating network\n")
	log.Debugf("not printed at info\n")
	// Output: *** Creating network
}
