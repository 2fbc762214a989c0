package testenv

import (
	"fmt"
	"testing"
)

// recorder stands in for a test: it records whether the helper skipped or
// failed instead of ending the goroutine.
type recorder struct {
	testing.TB
	skipped, failed string
}

type stop struct{}

func (r *recorder) Helper() {}
func (r *recorder) Skip(args ...any) {
	r.skipped = fmt.Sprint(args...)
	panic(stop{})
}
func (r *recorder) Skipf(format string, args ...any) { r.Skip(fmt.Sprintf(format, args...)) }
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	panic(stop{})
}

func call(fn func(t testing.TB)) (r *recorder) {
	r = &recorder{}
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(stop); !ok {
				panic(v)
			}
		}
	}()
	fn(r)
	return r
}

func TestMissingToolSkipsOrFails(t *testing.T) {
	missing := func(tb testing.TB) { Tools(tb, "hymn-no-such-tool", "ip") }
	t.Setenv(RequireEnv, "")
	if r := call(missing); r.skipped == "" || r.failed != "" {
		t.Errorf("without %s: skipped %q, failed %q; want a skip", RequireEnv, r.skipped, r.failed)
	}
	t.Setenv(RequireEnv, "all")
	r := call(missing)
	if r.failed == "" || r.skipped != "" {
		t.Fatalf("with %s=all: skipped %q, failed %q; want a failure", RequireEnv, r.skipped, r.failed)
	}
	if want := "hymn-no-such-tool is not installed"; !contains(r.failed, want) {
		t.Errorf("failure %q does not say %q", r.failed, want)
	}
}

func TestKnownToolNamesItsPackage(t *testing.T) {
	t.Setenv(RequireEnv, "")
	t.Setenv("PATH", t.TempDir())
	r := call(func(tb testing.TB) { Tools(tb, "iptables") })
	if !contains(r.skipped, "apt-get install iptables") {
		t.Errorf("skip %q does not name the package", r.skipped)
	}
}

func TestHardwareAlwaysSkips(t *testing.T) {
	t.Setenv(RequireEnv, "all")
	r := call(func(tb testing.TB) { Hardware(tb, "KVM") })
	if r.failed != "" || !contains(r.skipped, "hardware this machine does not have: KVM") {
		t.Errorf("skipped %q, failed %q", r.skipped, r.failed)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
