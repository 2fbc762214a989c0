package vm

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
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
	// The context ends after 300 ms.
	testenv.Elapsed(t, "connectQMP without a greeting", time.Since(start), 3*time.Second)
}
