package controller

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hymn-net/hymn/cluster"
	"github.com/hymn-net/hymn/kube/api/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A Topology's text is its author's, not the operator's: each file it
// names is refused with one line naming the field, the same line whether
// the file exists, is a FIFO or is missing (no existence oracle), and
// never with the file's content.
func TestTopologyFileNamesRefused(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "token")
	// A file the parser would refuse, quoting its first line, if it
	// were read.
	if err := os.WriteFile(secret, []byte("eyJhbGciOiJSUzI1NiJ9.SECRET-TOKEN\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := func(params string) string {
		return "nodes: [h1, h2]\nlinks:\n  - endpoints: [h1, h2]\n    params: {" + params + "}\n"
	}
	node := func(params string) string {
		return "nodes:\n  - name: h1\n    backend: vm\n    params: {" + params + "}\n  - h2\nlinks:\n  - endpoints: [h1, h2]\n"
	}
	for _, c := range []struct{ name, file, want string }{
		{"trace token", link("trace: /var/run/secrets/kubernetes.io/serviceaccount/token"), "trace: a file name is not accepted from a Topology resource"},
		{"trace existing", link("trace: " + secret), "trace: a file name is not accepted from a Topology resource"},
		{"trace relative", link("trace: ../token"), "trace: a file name is not accepted from a Topology resource"},
		{"trace fifo", link("trace: " + fifo), "trace: a file name is not accepted from a Topology resource"},
		{"a>b trace", link("a>b.trace: " + secret), "a>b.trace: a file name is not accepted from a Topology resource"},
		{"schedule param", link("schedule: " + secret), "schedule: a file name is not accepted from a Topology resource"},
		{"schedule field", "nodes: [h1, h2]\nlinks:\n  - endpoints: [h1, h2]\n    schedule: " + secret + "\n", "schedule: a file name is not accepted from a Topology resource"},
		{"schedule file", "nodes: [h1, h2]\nlinks:\n  - endpoints: [h1, h2]\n    schedule: {file: " + secret + "}\n", "schedule: a file name is not accepted from a Topology resource"},
		{"vm image", node("image: " + secret), "image: a file name is not accepted from a Topology resource"},
		{"vm kernel", node("kernel: /boot/vmlinuz"), "kernel: a file name is not accepted from a Topology resource"},
		{"vm hostfs", node("hostfs: /root"), "hostfs: a file name is not accepted from a Topology resource"},
		{"vm share root", node("share: root"), "share: root (every file root may read) is not accepted from a Topology resource"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &Reconciler{Image: "hymn:test"}
			tp := &v1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "default"}}
			tp.Spec.File = c.file
			_, _, _, err := r.validate(tp)
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) {
				t.Fatalf("got %q, want %q", msg, c.want)
			}
			for _, leak := range []string{"SECRET", "eyJ", "no such file", "FIFO", "not a regular file", secret, fifo} {
				if strings.Contains(msg, leak) {
					t.Fatalf("the message %q reveals %q", msg, leak)
				}
			}
			if strings.Count(msg, "\n") > 0 {
				t.Fatalf("the refusal is more than one line: %q", msg)
			}
		})
	}
	// Inline schedules are the author's own text and stay allowed.
	ok := "nodes: [h1, h2]\nlinks:\n  - endpoints: [h1, h2]\n    schedule: [{at: 0s, params: {delay: 5ms}}, {at: 1s, params: {delay: 10ms}}]\n"
	tp := &v1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "default"}}
	tp.Spec.File = ok
	if _, _, _, err := (&Reconciler{Image: "hymn:test"}).validate(tp); err != nil {
		t.Fatalf("an inline schedule was refused: %v", err)
	}
}

func TestVNIKeyStablePerTopology(t *testing.T) {
	a, b := vniKeyFor("uid-1"), vniKeyFor("uid-1")
	if a != b {
		t.Fatalf("two reconciles of one Topology got VNI keys %s and %s", a, b)
	}
	if a == vniKeyFor("uid-2") {
		t.Fatal("two Topologies share a VNI key")
	}
	if len(a) != 2*cluster.VNIKeyLen {
		t.Fatalf("key %q is not %d hex digits", a, 2*cluster.VNIKeyLen)
	}
}
