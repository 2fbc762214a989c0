package cli

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/internal/testenv"
)

func TestVMImageCommand(t *testing.T) {
	testenv.Tools(t, "busybox")
	if _, err := os.Stat("/lib/modules"); err != nil {
		testenv.Skip(t, "no /lib/modules to build a boot image from (apt-get install linux-image-amd64)")
	}
	var out bytes.Buffer
	cmd := NewVMCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"image", "--cache", t.TempDir()})
	if err := cmd.Execute(); err != nil {
		testenv.Skip(t, fmt.Sprintf("no boot image on this machine: %v", err))
	}
	if !strings.Contains(out.String(), "kernel: ") || !strings.Contains(out.String(), "initramfs.cpio") {
		t.Fatalf("output: %q", out.String())
	}
}

func TestVMBootCommand(t *testing.T) {
	testenv.RootAndTools(t, "qemu-system-x86_64", "busybox")
	var out, errOut bytes.Buffer
	cmd := NewVMCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"boot", "-p", "memory=256M", "uname", "-r"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	t.Logf("%s%s", errOut.String(), out.String())
	if !strings.Contains(errOut.String(), "*** VM vm ready in") || strings.TrimSpace(out.String()) == "" {
		t.Fatalf("stdout %q stderr %q", out.String(), errOut.String())
	}
}
