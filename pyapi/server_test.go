package pyapi

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
)

// talk runs a server on one end of a pipe and returns a line reader and
// a request writer for the other.
func talk(t *testing.T) (func() map[string]any, func(string), chan error) {
	t.Helper()
	client, server := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- Serve(context.Background(), server, Config{Version: "test"}) }()
	t.Cleanup(func() { _ = client.Close() })
	r := bufio.NewReader(client)
	read := func() map[string]any {
		t.Helper()
		_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("answer %q: %v", line, err)
		}
		return m
	}
	write := func(s string) {
		t.Helper()
		_ = client.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := client.Write([]byte(s + "\n")); err != nil {
			t.Fatalf("writing: %v", err)
		}
	}
	return read, write, done
}

func TestProtocolHelloFirst(t *testing.T) {
	read, write, _ := talk(t)
	hello := read()
	if hello["hello"] != "hymn-pyapi" || hello["version"] != float64(ProtocolVersion) {
		t.Fatalf("hello = %v", hello)
	}
	write(`{"id":1,"op":"info"}`)
	if m := read(); m["ok"] != false || !strings.Contains(m["error"].(string), "first request must be hello") {
		t.Fatalf("a request before hello: %v", m)
	}
	write(`{"id":2,"op":"hello","args":{"version":1}}`)
	if m := read(); m["ok"] != true || m["id"] != float64(2) {
		t.Fatalf("hello answer: %v", m)
	}
	write(`{"id":3,"op":"frobnicate"}`)
	if m := read(); m["ok"] != false || m["kind"] != "usage" {
		t.Fatalf("unknown op: %v", m)
	}
	write(`{"id":4,"op":"ping"}`)
	if m := read(); m["ok"] != false || m["kind"] != "state" {
		t.Fatalf("ping before build: %v", m)
	}
	write(`{"id":5,"op":"delNode","args":{"name":"h1"}}`)
	if m := read(); m["ok"] != false || m["kind"] != "state" {
		t.Fatalf("delNode before build: %v", m)
	}
	write(`not json`)
	if m := read(); m["ok"] != false || m["kind"] != "usage" {
		t.Fatalf("garbage: %v", m)
	}
}

func TestProtocolVersionMismatch(t *testing.T) {
	read, write, done := talk(t)
	read()
	write(`{"id":1,"op":"hello","args":{"version":99}}`)
	m := read()
	if m["ok"] != false || !strings.Contains(m["error"].(string), "version 99") {
		t.Fatalf("version mismatch: %v", m)
	}
	select {
	case err := <-done: // the server hangs up on a client it cannot serve
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("server kept a client of another protocol version")
	}
}

func TestListenRefusesOpenDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(filepath.Join(dir, "sock")); err == nil || !strings.Contains(err.Error(), "0700") {
		t.Fatalf("Listen in a 0755 directory: %v", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	// A symbolic link to the directory: its owner could point it
	// elsewhere once checked.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(filepath.Join(link, "sock")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Listen through a symbolic link: %v", err)
	}
}

// TestListenRefusesAnotherUsersDirectory: a 0700 directory of another
// user's is theirs to replace the socket in.
func TestListenRefusesAnotherUsersDirectory(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if ln, err := Listen(filepath.Join(dir, "sock")); err == nil || !strings.Contains(err.Error(), "uid 65534") {
		if ln != nil {
			_ = ln.Close() // the failure is the news
		}
		t.Fatalf("Listen in a directory of uid 65534: %v, want a refusal naming its owner", err)
	}
}

func TestPackageDirChecksContent(t *testing.T) {
	old := CacheRoot
	CacheRoot = filepath.Join(t.TempDir(), "cache")
	t.Cleanup(func() { CacheRoot = old })
	if os.Geteuid() != 0 {
		t.Setenv("XDG_CACHE_HOME", filepath.Dir(CacheRoot))
	}
	dir, err := PackageDir()
	if err != nil {
		t.Fatal(err)
	}
	net := filepath.Join(dir, "mininet", "net.py")
	want, err := os.ReadFile(net)
	if err != nil || !strings.Contains(string(want), "class Mininet") {
		t.Fatalf("extracted net.py: %v", err)
	}
	// A tampered file is replaced by the binary's own.
	if err := os.WriteFile(net, []byte("import os; os.system('evil')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir2, err := PackageDir()
	if err != nil || dir2 != dir {
		t.Fatalf("second PackageDir: %q, %v", dir2, err)
	}
	if got, _ := os.ReadFile(net); string(got) != string(want) {
		t.Fatal("a tampered cache file was kept")
	}
	// So is one others may write.
	if err := os.Chmod(net, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := PackageDir(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(net); st.Mode().Perm()&0o022 != 0 {
		t.Fatalf("a world-writable cache file was kept (%v)", st.Mode())
	}
}
