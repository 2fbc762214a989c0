package cli

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestVMImageCommand(t *testing.T) {
	if _, err := exec.LookPath("busybox"); err != nil {
		t.Skip("busybox is not installed (apt-get install busybox-static)")
	}
	if _, err := os.Stat("/lib/modules"); err != nil {
		t.Skip("no /lib/modules to build a boot image from")
	}
	var out bytes.Buffer
	cmd := NewVMCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"image", "--cache", t.TempDir()})
	if err := cmd.Execute(); err != nil {
		t.Skipf("no boot image on this machine: %v", err)
	}
	if !strings.Contains(out.String(), "kernel: ") || !strings.Contains(out.String(), "initramfs.cpio") {
		t.Fatalf("output: %q", out.String())
	}
}

func TestVMBootCommand(t *testing.T) {
	if os.Getenv("HYMN_VM_BOOT_TEST") == "" {
		t.Skip("boots a VM (seconds under TCG); set HYMN_VM_BOOT_TEST=1 to run")
	}
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
