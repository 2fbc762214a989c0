package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func tarball(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestCheckIntegrity(t *testing.T) {
	data := []byte("package")
	sum := sha512.Sum512(data)
	good := "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
	if err := checkIntegrity(data, "sha1-xyz "+good); err != nil {
		t.Errorf("a matching sha512 among several: %v", err)
	}
	if err := checkIntegrity([]byte("tampered"), good); err == nil || !strings.Contains(err.Error(), "mismatch") {
		t.Errorf("a tampered download: %v", err)
	}
	if err := checkIntegrity(data, "sha1-xyz"); err == nil || !strings.Contains(err.Error(), "no sha512") {
		t.Errorf("no sha512 to check: %v", err)
	}
}

func TestUnpack(t *testing.T) {
	dir := t.TempDir()
	if err := unpack(tarball(t, map[string]string{"package/package.json": "{}", "package/lib/a.js": "a"}), dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "lib", "a.js")); err != nil || string(b) != "a" {
		t.Errorf("lib/a.js: %q %v", b, err)
	}
	out := t.TempDir()
	if err := unpack(tarball(t, map[string]string{"package/../../escape.js": "x"}), filepath.Join(out, "pkg")); err == nil {
		t.Error("an entry outside the package was unpacked")
	}
	if _, err := os.Stat(filepath.Join(out, "escape.js")); err == nil {
		t.Error("escape.js written outside the package directory")
	}
}
