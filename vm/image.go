package vm

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Image is a bootable kernel and initramfs.
type Image struct {
	Kernel        string // path of the kernel (bzImage)
	Initrd        string // path of the initramfs (uncompressed cpio)
	KernelRelease string // 6.1.0-57-amd64
	Cached        bool   // true when the image was already built
	// Rebuilt says why a cached image was discarded and built again (its
	// files no longer match the hashes of its manifest); "" otherwise.
	Rebuilt string
}

// ImageOptions choose the inputs of BuildImageWith; empty fields are found
// on the host.
type ImageOptions struct {
	Kernel  string // a vmlinuz whose modules are in /lib/modules/<release>
	Busybox string // a static busybox
	Agent   string // a static hymn-agent
	Modules string // the /lib/modules root (tests)
}

// imageFormat changes whenever the layout of the initramfs changes, so a
// cached image of an older hymn is never reused.
const imageFormat = "hymn-image-v4"

// bootModules are the drivers the boot image loads; their dependencies
// (virtio, virtio_ring, failover, ...) come from modules.dep.
var bootModules = []string{"virtio_pci", "virtio_console", "virtio_net", "virtio_blk", "9pnet_virtio", "9p"}

// CacheEnv names the environment variable that moves hymn's cache from
// /var/cache/hymn.
const CacheEnv = "HYMN_CACHE"

// DefaultCacheDir is where built images are kept: $HYMN_CACHE/vm, else
// /var/cache/hymn/vm for root, else the user's cache directory (a user can
// build an image, only root boots VMs). The directory is created 0700 and
// must belong to the user running hymn and be writable by nobody else
// (anyone who can write it chooses the kernel root boots).
func DefaultCacheDir() string {
	if d := os.Getenv(CacheEnv); d != "" {
		return filepath.Join(d, "vm")
	}
	if os.Geteuid() != 0 {
		if d, err := os.UserCacheDir(); err == nil {
			return filepath.Join(d, "hymn", "vm")
		}
	}
	return "/var/cache/hymn/vm"
}

// BuildImage builds (or finds in cacheDir) hymn's boot image from the
// host's Debian kernel, its virtio modules, busybox-static and the guest
// agent. The cache key is a hash of every input, so a second call with
// unchanged inputs only reads and hashes them, and checks the cached files
// against the SHA-256 sums of the image's manifest: an image that does not
// match is built again (Image.Rebuilt says why).
func BuildImage(ctx context.Context, cacheDir string) (*Image, error) {
	return BuildImageWith(ctx, cacheDir, ImageOptions{})
}

// buildMu makes concurrent builds in one process (VMs booting in
// parallel) wait for the first instead of all building the same image.
var buildMu sync.Mutex

// BuildImageWith is BuildImage with chosen inputs.
func BuildImageWith(ctx context.Context, cacheDir string, opts ImageOptions) (*Image, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if cacheDir == "" {
		cacheDir = DefaultCacheDir()
	}
	if err := makePrivateDir("boot image cache", cacheDir); err != nil {
		return nil, err
	}
	if opts.Modules == "" {
		opts.Modules = "/lib/modules"
	}
	kernel, release, err := findKernel(opts.Kernel, opts.Modules)
	if err != nil {
		return nil, err
	}
	modDir := filepath.Join(opts.Modules, release)
	mods, err := moduleOrder(modDir, bootModules)
	if err != nil {
		return nil, err
	}
	busybox, err := findBusybox(opts.Busybox)
	if err != nil {
		return nil, err
	}
	agentPath, err := findAgent(ctx, opts.Agent)
	if err != nil {
		return nil, err
	}
	applets, err := busyboxApplets(ctx, busybox)
	if err != nil {
		return nil, err
	}

	// Read every input once: the hash and the archive use the same bytes.
	inputs := map[string][]byte{}
	read := func(path string) error {
		if _, ok := inputs[path]; ok {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		inputs[path] = data
		return nil
	}
	for _, p := range append([]string{kernel, busybox, agentPath}, mods...) {
		if err := read(p); err != nil {
			return nil, fmt.Errorf("boot image: %w", err)
		}
	}
	h := sha256.New()
	// A hash's Write never returns an error.
	_, _ = fmt.Fprintf(h, "%s\n%s\n%s\n", imageFormat, release, strings.Join(applets, " "))
	for _, p := range append([]string{kernel, busybox, agentPath}, mods...) {
		_, _ = fmt.Fprintf(h, "%s %d\n", filepath.Base(p), len(inputs[p]))
		h.Write(inputs[p])
	}
	key := hex.EncodeToString(h.Sum(nil))[:20]
	dir := filepath.Join(cacheDir, key)
	img := &Image{Kernel: filepath.Join(dir, "vmlinuz"), Initrd: filepath.Join(dir, "initramfs.cpio"), KernelRelease: release}
	usePVH := func() {
		if fileExists(filepath.Join(dir, "vmlinux")) {
			img.Kernel = filepath.Join(dir, "vmlinux")
		}
	}
	if _, err := os.Lstat(dir); err == nil {
		verr := verifyImage(dir)
		if verr == nil {
			img.Cached = true
			usePVH()
			return img, nil
		}
		// Moved aside first, so a rename of the new image cannot fail
		// on it, then removed.
		img.Rebuilt = verr.Error()
		// The removals are best effort: what stays in the way makes
		// the rename fail, which is reported, and a leftover .bad-
		// directory only takes space until the next rebuild.
		aside := filepath.Join(cacheDir, ".bad-"+key)
		_ = os.RemoveAll(aside)
		if err := os.Rename(dir, aside); err != nil {
			return nil, fmt.Errorf("boot image: discarding %s (%v): %w", dir, verr, err)
		}
		_ = os.RemoveAll(aside)
	}
	// Built in a temporary directory and renamed into place, so concurrent
	// builders (VMs booting in parallel) never see half an image.
	tmp, err := os.MkdirTemp(cacheDir, ".build-")
	if err != nil {
		return nil, fmt.Errorf("boot image: %w", err)
	}
	// Gone after the rename into place; otherwise a best-effort cleanup
	// beside the error returned.
	defer func() { _ = os.RemoveAll(tmp) }()
	if err := os.WriteFile(filepath.Join(tmp, "vmlinuz"), inputs[kernel], 0o644); err != nil {
		return nil, fmt.Errorf("boot image: %w", err)
	}
	// Under TCG, decompressing the bzImage is about half of the CPU a boot
	// costs (5.3 s -> 2.2-2.6 s measured here): boot the uncompressed ELF
	// through PVH instead when the kernel supports it (CONFIG_PVH).
	if elfKernel := extractPVHKernel(ctx, inputs[kernel]); elfKernel != nil {
		if err := os.WriteFile(filepath.Join(tmp, "vmlinux"), elfKernel, 0o644); err != nil {
			return nil, fmt.Errorf("boot image: %w", err)
		}
	}
	err = writeCpioFile(filepath.Join(tmp, "initramfs.cpio"), func(c *cpioWriter) {
		for _, d := range []string{"bin", "sbin", "usr", "usr/bin", "usr/sbin", "dev", "proc", "sys", "tmp", "run", "root", "etc", "var", "lib", "lib/modules", "lib/modules/hymn"} {
			c.Dir(d)
		}
		// The kernel opens /dev/console for init before /dev is mounted.
		c.CharDev("dev/console", 0o600, 5, 1)
		c.CharDev("dev/null", 0o666, 1, 3)
		c.File("init", 0o755, inputs[agentPath])
		c.File("bin/busybox", 0o755, inputs[busybox])
		for _, a := range applets {
			if a != "bin/busybox" && strings.Contains(a, "/") {
				c.Symlink(a, "/bin/busybox")
			}
		}
		var order []string
		for _, m := range mods {
			name := filepath.Base(m)
			order = append(order, name)
			c.File("lib/modules/hymn/"+name, 0o644, inputs[m])
		}
		c.File("lib/modules/hymn/order", 0o644, []byte(strings.Join(order, "\n")+"\n"))
		c.File("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\n"))
		c.File("etc/group", 0o644, []byte("root:x:0:\n"))
		c.File("etc/hosts", 0o644, []byte("127.0.0.1 localhost\n"))
	})
	if err != nil {
		return nil, fmt.Errorf("boot image: writing the initramfs: %w", err)
	}
	if err := writeManifest(tmp); err != nil {
		return nil, fmt.Errorf("boot image: %w", err)
	}
	// The directory stays 0700 (MkdirTemp's mode): QEMU, unprivileged,
	// gets the files as descriptors.
	if err := os.Rename(tmp, dir); err != nil {
		if verifyImage(dir) == nil {
			img.Cached = true // another builder won the race
			usePVH()
			return img, nil
		}
		return nil, fmt.Errorf("boot image: %w", err)
	}
	usePVH()
	pruneCache(cacheDir, key)
	return img, nil
}

// imagesKept is how many images the cache keeps besides the current one
// (an image is about 80 MB with its uncompressed kernel).
const imagesKept = 1

// pruneCache removes all but the newest imagesKept images other than
// current: every kernel or agent update makes a new image, and running
// VMs of an older hymn may still use the previous one.
func pruneCache(cacheDir, current string) {
	entries, err := os.ReadDir(cacheDir)
	if err != nil {
		return
	}
	type image struct {
		name string
		mod  time.Time
	}
	var old []image
	for _, e := range entries {
		if !e.IsDir() || e.Name() == current || len(e.Name()) != len(current) {
			continue
		}
		if _, err := hex.DecodeString(e.Name()); err != nil {
			continue
		}
		if info, err := e.Info(); err == nil {
			old = append(old, image{e.Name(), info.ModTime()})
		}
	}
	sort.Slice(old, func(i, j int) bool { return old[i].mod.After(old[j].mod) })
	// Best effort, as the listing above: an image that cannot be removed
	// is only space, tried again on the next build.
	for i := imagesKept; i < len(old); i++ {
		_ = os.RemoveAll(filepath.Join(cacheDir, old[i].name))
	}
}

// extractPVHKernel returns the uncompressed kernel inside a bzImage if it
// is an ELF that QEMU can boot directly (it carries the Xen PVH entry
// note), or nil. Debian compresses with xz, read through the xz program;
// gzip is read in-process. Any failure just means: boot the bzImage.
func extractPVHKernel(ctx context.Context, bz []byte) []byte {
	type method struct {
		magic  []byte
		decode func(data []byte) ([]byte, error)
	}
	methods := []method{
		{[]byte{0xfd, '7', 'z', 'X', 'Z', 0}, func(data []byte) ([]byte, error) {
			cmd := exec.CommandContext(ctx, "xz", "-dc", "--single-stream")
			cmd.Stdin = bytes.NewReader(data)
			return cmd.Output()
		}},
		{[]byte{0x1f, 0x8b, 0x08}, func(data []byte) ([]byte, error) {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				return nil, err
			}
			zr.Multistream(false)
			return io.ReadAll(zr)
		}},
	}
	for _, m := range methods {
		for off := 0; ; {
			i := bytes.Index(bz[off:], m.magic)
			if i < 0 {
				break
			}
			off += i
			if out, err := m.decode(bz[off:]); err == nil && hasPVHNote(out) {
				return out
			}
			off++
		}
	}
	return nil
}

// hasPVHNote reports whether an ELF kernel has XEN_ELFNOTE_PHYS32_ENTRY
// (type 18, owner "Xen"), which QEMU needs to boot it without a bzImage.
func hasPVHNote(data []byte) bool {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }() // an in-memory reader: nothing to close
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		notes, err := io.ReadAll(p.Open())
		if err != nil {
			continue
		}
		for len(notes) >= 12 {
			nameSz := f.ByteOrder.Uint32(notes[0:4])
			descSz := f.ByteOrder.Uint32(notes[4:8])
			typ := f.ByteOrder.Uint32(notes[8:12])
			nameEnd := 12 + int(nameSz+3)&^3
			end := nameEnd + int(descSz+3)&^3
			if end > len(notes) || nameEnd > len(notes) {
				break
			}
			if typ == 18 && strings.TrimRight(string(notes[12:12+nameSz]), "\x00") == "Xen" {
				return true
			}
			notes = notes[end:]
		}
	}
	return false
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// findKernel picks the given kernel or the newest /boot/vmlinuz-* whose
// modules are installed.
func findKernel(kernel, modRoot string) (path, release string, err error) {
	if kernel != "" {
		release = strings.TrimPrefix(filepath.Base(kernel), "vmlinuz-")
		if !fileExists(kernel) {
			return "", "", fmt.Errorf("%w: kernel=%q: no such file", ErrBadParam, kernel)
		}
		if !fileExists(filepath.Join(modRoot, release, "modules.dep")) {
			return "", "", fmt.Errorf("boot image: no modules for kernel %s in %s", release, filepath.Join(modRoot, release))
		}
		return kernel, release, nil
	}
	cands, _ := filepath.Glob("/boot/vmlinuz-*")
	sort.Sort(sort.Reverse(sort.StringSlice(cands)))
	for _, c := range cands {
		rel := strings.TrimPrefix(filepath.Base(c), "vmlinuz-")
		if fileExists(filepath.Join(modRoot, rel, "modules.dep")) {
			if f, err := os.Open(c); err == nil {
				_ = f.Close() // only opened to see that it is readable
				return c, rel, nil
			}
		}
	}
	return "", "", errors.New("boot image: no kernel in /boot with modules in /lib/modules (apt-get install linux-image-amd64)")
}

// moduleOrder resolves the wanted modules and their dependencies from
// modules.dep into load order (dependencies first). A module that is not
// listed is built into the kernel and needs no loading.
func moduleOrder(modDir string, want []string) ([]string, error) {
	f, err := os.Open(filepath.Join(modDir, "modules.dep"))
	if err != nil {
		return nil, fmt.Errorf("boot image: %w", err)
	}
	defer func() { _ = f.Close() }()
	deps := map[string][]string{} // module name -> [path, deps...]
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		mod, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		deps[modName(mod)] = append([]string{mod}, strings.Fields(rest)...)
	}
	var order []string
	seen := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		entry, ok := deps[name]
		if !ok {
			return
		}
		// modprobe loads the listed dependencies from last to first.
		for i := len(entry) - 1; i >= 1; i-- {
			visit(modName(entry[i]))
		}
		order = append(order, filepath.Join(modDir, entry[0]))
	}
	for _, w := range want {
		visit(w)
	}
	return order, nil
}

// modName turns kernel/drivers/net/virtio_net.ko(.xz) into virtio_net.
func modName(p string) string {
	b := filepath.Base(p)
	if i := strings.Index(b, ".ko"); i >= 0 {
		b = b[:i]
	}
	return strings.ReplaceAll(b, "-", "_")
}

func findBusybox(path string) (string, error) {
	if path == "" {
		var err error
		if path, err = exec.LookPath("busybox"); err != nil {
			return "", errors.New("boot image: busybox not found (apt-get install busybox-static)")
		}
	}
	if err := checkStatic(path); err != nil {
		return "", fmt.Errorf("boot image: busybox %s: %w (apt-get install busybox-static)", path, err)
	}
	return path, nil
}

// checkStatic rejects dynamically linked programs: the initramfs has no
// libc.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read-only
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("is dynamically linked")
		}
	}
	return nil
}

func busyboxApplets(ctx context.Context, busybox string) ([]string, error) {
	out, err := exec.CommandContext(ctx, busybox, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("boot image: %s --list-full: %w", busybox, err)
	}
	applets := strings.Fields(string(out))
	sort.Strings(applets)
	return slices.Compact(applets), nil
}

// findAgent locates a static hymn-agent: the given path, $HYMN_AGENT, one
// next to the running program, one on PATH, or, in a source checkout (tests,
// go run), one built from the source with the Go toolchain.
func findAgent(ctx context.Context, path string) (string, error) {
	check := func(p string) (string, error) {
		if err := checkStatic(p); err != nil {
			return "", fmt.Errorf("boot image: agent %s: %w (build it with CGO_ENABLED=0)", p, err)
		}
		return p, nil
	}
	if path != "" {
		return check(path)
	}
	if p := os.Getenv("HYMN_AGENT"); p != "" {
		return check(p)
	}
	if exe, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(exe), "hymn-agent"); fileExists(p) {
			return check(p)
		}
	}
	if p, err := exec.LookPath("hymn-agent"); err == nil {
		return check(p)
	}
	// Kept in the default cache whatever the image's cache directory, so
	// tests with their own image caches share one agent build.
	return buildAgentFromSource(ctx, DefaultCacheDir())
}

// buildAgentFromSource builds the agent when this package's source is on
// disk. The result is reused while it is newer than the agent's sources
// and go.sum, so a cached image build does not pay for a go build.
func buildAgentFromSource(ctx context.Context, cacheDir string) (string, error) {
	_, self, _, ok := runtime.Caller(0)
	notFound := errors.New("boot image: no hymn-agent found: put a static hymn-agent next to hymn or on PATH, or set HYMN_AGENT (build: CGO_ENABLED=0 go build ./vm/agent/cmd/hymn-agent)")
	if !ok {
		return "", notFound
	}
	root := filepath.Dir(filepath.Dir(self))
	srcDir := filepath.Join(root, "vm", "agent")
	if !fileExists(filepath.Join(root, "go.mod")) || !fileExists(filepath.Join(srcDir, "cmd", "hymn-agent", "main.go")) {
		return "", notFound
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", notFound
	}
	out := filepath.Join(cacheDir, "agent", "hymn-agent")
	if st, err := os.Stat(out); err == nil && !newerSources(srcDir, filepath.Join(root, "go.sum"), st.ModTime()) {
		return out, nil
	}
	if err := makePrivateDir("agent build cache", filepath.Dir(out)); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(filepath.Dir(out), ".hymn-agent-")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	_ = f.Close() // empty: only its name is used, as go build's output
	cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", tmp, "./vm/agent/cmd/hymn-agent")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		_ = os.Remove(tmp) // best effort: the build error is returned
		return "", fmt.Errorf("boot image: building hymn-agent: %w\n%s", err, msg)
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	return out, nil
}

func newerSources(dir, extra string, than time.Time) bool {
	newer := false
	if st, err := os.Stat(extra); err == nil && st.ModTime().After(than) {
		return true
	}
	// A walk error only ends the walk: what was seen decides, and a source
	// tree that cannot be read fails the go build that follows anyway.
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || newer {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			if info, err := d.Info(); err == nil && info.ModTime().After(than) {
				newer = true
			}
		}
		return nil
	})
	return newer
}

// manifestName is the file in each cached image that lists the SHA-256 of
// every other file in it.
const manifestName = "manifest.json"

// manifest is what manifestName holds.
type manifest struct {
	Format string            `json:"format"`
	SHA256 map[string]string `json:"sha256"` // file name -> hex digest
}

// imageFiles are the names an image directory may hold besides the
// manifest; vmlinux is optional (a kernel without PVH support).
var imageFiles = []string{"vmlinuz", "vmlinux", "initramfs.cpio"}

// writeManifest hashes the image files in dir and writes the manifest
// atomically (a temporary file renamed into place).
func writeManifest(dir string) error {
	m := manifest{Format: imageFormat, SHA256: map[string]string{}}
	for _, name := range imageFiles {
		sum, err := hashFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) && name == "vmlinux" {
			continue
		}
		if err != nil {
			return err
		}
		m.SHA256[name] = sum
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".manifest-")
	if err != nil {
		return err
	}
	// The cleanups on failure are best effort beside the error returned.
	if _, err := f.Write(append(data, '\n')); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return err
	}
	if err := errors.Join(f.Chmod(0o644), f.Sync(), f.Close()); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), filepath.Join(dir, manifestName))
}

// verifyImage checks a cached image before it is booted: the directory
// and every file belong to hymn's user and nobody else may write them, no
// symlinks, the manifest names the kernel and the initramfs, and every
// file has the SHA-256 the manifest gives.
func verifyImage(dir string) error {
	if err := checkPrivateDir("cached image", dir); err != nil {
		return err
	}
	check := func(name string) (*os.File, error) {
		path := filepath.Join(dir, name)
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return nil, err
		}
		st, err := f.Stat()
		if err == nil && !st.Mode().IsRegular() {
			err = fmt.Errorf("%s: not a regular file", path)
		}
		if err == nil {
			if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != os.Geteuid() || st.Mode().Perm()&0o022 != 0 {
				err = fmt.Errorf("%s: not owned by uid %d or writable by others", path, os.Geteuid())
			}
		}
		if err != nil {
			_ = f.Close() // read-only; the check's error is reported
			return nil, err
		}
		return f, nil
	}
	f, err := check(manifestName)
	if err != nil {
		return fmt.Errorf("cached image %s: %w", dir, err)
	}
	// The files checked here are only read: their Close has nothing to
	// report.
	data, err := io.ReadAll(io.LimitReader(f, 64<<10))
	_ = f.Close()
	if err != nil {
		return fmt.Errorf("cached image %s: %w", dir, err)
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil || m.Format != imageFormat || m.SHA256["vmlinuz"] == "" || m.SHA256["initramfs.cpio"] == "" {
		return fmt.Errorf("cached image %s: unusable manifest", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("cached image %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.Name() != manifestName && m.SHA256[e.Name()] == "" {
			return fmt.Errorf("cached image %s: %s is not in the manifest", dir, e.Name())
		}
	}
	for name, want := range m.SHA256 {
		if !slices.Contains(imageFiles, name) {
			return fmt.Errorf("cached image %s: manifest names %q", dir, name)
		}
		f, err := check(name)
		if err != nil {
			return fmt.Errorf("cached image %s: %w", dir, err)
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("cached image %s: %w", dir, err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != want {
			return fmt.Errorf("cached image %s: %s has a SHA-256 starting %.12s, the manifest's starts %.12s", dir, name, got, want)
		}
	}
	return nil
}

func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }() // read-only
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
