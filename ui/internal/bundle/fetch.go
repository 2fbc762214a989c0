package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// lockFile is what fetch reads of package-lock.json (lockfileVersion 2
// and 3): each installed package's path, version, integrity and, when
// npm recorded it, where it came from.
type lockFile struct {
	LockfileVersion int `json:"lockfileVersion"`
	Packages        map[string]struct {
		Version   string `json:"version"`
		Resolved  string `json:"resolved"`
		Integrity string `json:"integrity"`
		Link      bool   `json:"link"`
	} `json:"packages"`
}

// registry is where packages come from: npm's own setting when given
// (npm_config_registry, as npm reads it), else the public registry.
func registry() string {
	if r := os.Getenv("npm_config_registry"); r != "" {
		return strings.TrimSuffix(r, "/")
	}
	return "https://registry.npmjs.org"
}

// fetch installs the packages package-lock.json pins into
// web/node_modules without npm: each tarball is downloaded from the
// registry, checked against the lock's sha512 integrity and unpacked
// (npm's tarballs hold the package under "package/"). So the bundle can
// be rebuilt, and checked, where Node.js is not installed. Nothing is
// left in node_modules when a package fails.
func fetch(web string) (err error) {
	data, err := os.ReadFile(filepath.Join(web, "package-lock.json"))
	if err != nil {
		return err
	}
	var lock lockFile
	if err := json.Unmarshal(data, &lock); err != nil {
		return fmt.Errorf("%s/package-lock.json: %w", web, err)
	}
	if lock.LockfileVersion < 2 {
		return fmt.Errorf("%s/package-lock.json: lockfileVersion %d has no packages list (npm 7 or later writes 2 or 3)", web, lock.LockfileVersion)
	}
	modules := filepath.Join(web, "node_modules")
	defer func() {
		if err != nil {
			_ = os.RemoveAll(modules) // a half-installed tree would pass the next run's check
		}
	}()
	client := &http.Client{Timeout: 2 * time.Minute}
	for dir, p := range lock.Packages {
		if dir == "" || p.Link {
			continue // the project itself; a workspace link
		}
		if !strings.HasPrefix(dir, "node_modules/") || !filepath.IsLocal(dir) {
			return fmt.Errorf("package-lock.json: unexpected package path %q", dir)
		}
		// A nested copy (node_modules/a/node_modules/b) is package b.
		name := dir[strings.LastIndex(dir, "node_modules/")+len("node_modules/"):]
		url := p.Resolved
		if url == "" {
			// registry/NAME/-/BASENAME-VERSION.tgz (BASENAME drops a
			// scope: @types/node -> node-20.0.0.tgz).
			url = registry() + "/" + name + "/-/" + path.Base(name) + "-" + p.Version + ".tgz"
		}
		tgz, err := download(client, url)
		if err != nil {
			return fmt.Errorf("%s@%s: %w", name, p.Version, err)
		}
		if err := checkIntegrity(tgz, p.Integrity); err != nil {
			return fmt.Errorf("%s@%s from %s: %w", name, p.Version, url, err)
		}
		if err := unpack(tgz, filepath.Join(web, filepath.FromSlash(dir))); err != nil {
			return fmt.Errorf("%s@%s: %w", name, p.Version, err)
		}
	}
	return nil
}

func download(c *http.Client, url string) ([]byte, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }() // read-only; ReadAll's error is the one that counts
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 256<<20))
}

// checkIntegrity compares data with an npm integrity string
// ("sha512-BASE64"); one of several space-separated hashes is enough.
func checkIntegrity(data []byte, integrity string) error {
	sum := sha512.Sum512(data)
	got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
	for _, want := range strings.Fields(integrity) {
		if want == got {
			return nil
		}
	}
	if !strings.Contains(integrity, "sha512-") {
		return fmt.Errorf("integrity %q has no sha512 hash to check the download against", integrity)
	}
	return errors.New("integrity mismatch: the download is not what package-lock.json pins")
}

// unpack writes a package tarball's files (under "package/") into dir.
func unpack(tgz []byte, dir string) error {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue // npm installs only files (directories are made as needed)
		}
		_, rel, ok := strings.Cut(h.Name, "/") // "package/lib/x.js" -> "lib/x.js"
		if !ok || rel == "" || !filepath.IsLocal(rel) {
			return fmt.Errorf("tarball entry %q is outside the package", h.Name)
		}
		dst := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, io.LimitReader(tr, 64<<20))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
}
