package vm

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// hymn makes QMP's listening socket itself, so a QEMU that never gets as
// far as QMP (stuck allocating memory=1T, say) still accepts the
// connection: the handshake must end with the context, not hang.
func TestQMPGreetingNeverComes(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "qmp.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }() // accepts into its backlog, never greets
	m := &machine{exited: make(chan struct{}), paths: paths{QMP: sock}, stderr: &limitedBuffer{max: 1 << 10}}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = m.connectQMP(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("connectQMP = %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("connectQMP returned after %v; the context ended after 300ms", d)
	}
}
