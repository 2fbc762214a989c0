package cli

import (
	"errors"
	"testing"
)

func TestParsePingSample(t *testing.T) {
	got, err := parseTests([]string{"pingsample+pingsample,20"})
	if err != nil || len(got) != 2 {
		t.Fatalf("parseTests: %v %v", got, err)
	}
	for name, want := range map[string]int{"pingsample": 1000, "pingsample,20": 20} {
		if n, ok, err := pingSampleSize(name); !ok || err != nil || n != want {
			t.Errorf("%s: %d %v %v, want %d", name, n, ok, err, want)
		}
	}
	for _, bad := range []string{"pingsample,0", "pingsample,x", "pingsample,-3"} {
		if _, err := parseTests([]string{bad}); !errors.Is(err, ErrUsage) {
			t.Errorf("%s: %v, want a usage error", bad, err)
		}
	}
	if _, err := parseTests([]string{"pingsamples"}); !errors.Is(err, ErrUsage) {
		t.Errorf("pingsamples: %v, want a usage error", err)
	}
}
