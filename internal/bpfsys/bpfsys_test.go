package bpfsys

import (
	"strings"
	"testing"

	"github.com/hymn-net/hymn/internal/testenv"
	"golang.org/x/sys/unix"
)

func TestObjName(t *testing.T) {
	for in, want := range map[string]string{
		"hymn_sw_s1":            "hymn_sw_s1",
		"s1-eth2 x/y":           "s1eth2xy",
		"a_very_long_name_here": "a_very_long_nam",
		"":                      "",
	} {
		b := ObjName(in)
		if got := strings.TrimRight(string(b[:]), "\x00"); got != want {
			t.Errorf("ObjName(%q) = %q, want %q", in, got, want)
		}
		if b[15] != 0 {
			t.Errorf("ObjName(%q) is not NUL-terminated", in)
		}
	}
}

// A program the verifier refuses comes back as an error with its reason;
// a good one loads.
func TestLoadProgram(t *testing.T) {
	testenv.Root(t)
	exit := []byte{0x95, 0, 0, 0, 0, 0, 0, 0}
	// r0 = 2 (XDP_PASS); exit
	good := append([]byte{0xb7, 0, 0, 0, 2, 0, 0, 0}, exit...)
	fd, err := LoadProgram(unix.BPF_PROG_TYPE_XDP, good, "hymn_test")
	if err != nil {
		t.Fatalf("a valid program: %v", err)
	}
	if err := unix.Close(fd); err != nil {
		t.Fatal(err)
	}
	// exit with r0 never written: the verifier says "R0 !read_ok".
	_, err = LoadProgram(unix.BPF_PROG_TYPE_XDP, exit, "hymn_test_bad")
	if err == nil || !strings.Contains(err.Error(), "hymn_test_bad") || !strings.Contains(err.Error(), "R0") {
		t.Fatalf("an invalid program: error %v, want one naming the program and the verifier's reason (R0)", err)
	}
}

func TestAsmUndefinedLabel(t *testing.T) {
	a := NewAsm()
	a.Ja("nowhere")
	if _, err := a.Assemble(); err == nil {
		t.Error("a jump to an undefined label assembled")
	}
}
