package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/vm"
	"github.com/spf13/cobra"
)

// NewVMCmd returns `hymn vm` with its subcommands: image (build the boot
// image) and boot (boot one VM node and run a command in it, to check a
// machine and measure the boot time).
func NewVMCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "vm",
		Short: "VM nodes: build the boot image, boot a test VM",
		Long: `VM nodes (--nodes vm, or backend: vm in a topology file) are QEMU guests
booted from hymn's boot image: the host's Debian kernel (linux-image-amd64),
its virtio modules, busybox-static and hymn's guest agent. The image is built
on first use and cached by a hash of its inputs in /var/cache/hymn/vm (or
$HYMN_CACHE/vm), a directory of mode 0700 that must belong to root; every
cached file is checked against the SHA-256 sums of its manifest before a VM
boots it, and built again if one differs.

QEMU runs as an unprivileged user of its own, so the host directory shared
with the guest at /host (hostfs=, default /) is read-only and shows only what
every user of the host may read: no /etc/shadow, no 0600 keys, nothing under
/root. share=root runs QEMU as root instead and lets the guest read every
file root may read: only for guests you trust. image= takes regular files;
a block device needs allow_device=on. machine= takes pc, q35 or a versioned
pc-i440fx-X.Y / pc-q35-X.Y; properties after the type need
allow_machine_props=on.`,
		Args: usageArgs(cobra.NoArgs),
	}
	cmd.AddCommand(newVMImageCmd(), newVMBootCmd())
	return cmd
}

func newVMImageCmd() *cobra.Command {
	var opts vm.ImageOptions
	var cacheDir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build (or find in the cache) the VM boot image and print its paths",
		Long: `image builds hymn's VM boot image, or finds it in the cache, and prints the
kernel and initramfs paths. A second run with unchanged inputs only hashes
them. The guest agent is taken from --agent, $HYMN_AGENT, a hymn-agent next
to hymn or on PATH, or built from the source tree when hymn runs from one.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			t0 := time.Now()
			img, err := vm.BuildImageWith(cmd.Context(), cacheDir, opts)
			if err != nil {
				return err
			}
			d := time.Since(t0)
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{
					"kernel": img.Kernel, "initrd": img.Initrd, "kernel_release": img.KernelRelease,
					"cached": img.Cached, "seconds": d.Seconds(),
				})
			}
			how := "built"
			if img.Cached {
				how = "cached"
			}
			_, _ = fmt.Fprintf(out, "kernel: %s (%s)\ninitrd: %s\n%s in %.2f s\n", img.Kernel, img.KernelRelease, img.Initrd, how, d.Seconds())
			return nil
		},
	}
	cmd.Flags().StringVar(&cacheDir, "cache", "", "image cache directory (default "+vm.DefaultCacheDir()+")")
	cmd.Flags().StringVar(&opts.Kernel, "kernel", "", "kernel to use (default: the newest /boot/vmlinuz-* with modules)")
	cmd.Flags().StringVar(&opts.Busybox, "busybox", "", "static busybox to use (default: busybox on PATH)")
	cmd.Flags().StringVar(&opts.Agent, "agent", "", "static hymn-agent to use")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newVMBootCmd() *cobra.Command {
	var params []string
	cmd := &cobra.Command{
		Use:   "boot [-p key=value]... [command...]",
		Short: "Boot one VM node, run a command in it (default: uname -a), shut it down",
		Long: `boot boots a single VM node the way a topology would (same parameters as
addHost: cpus, memory, kernel, initrd, image, cmdline, machine, cpupin, accel,
hostfs, share, offload, allow_device, allow_machine_props),
prints the boot time, runs the command through the guest agent and shuts
the VM down. It needs root.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if os.Geteuid() != 0 {
				return errors.New("hymn vm boot must run as root (it creates a namespace and taps)")
			}
			kv := map[string]string{}
			for _, p := range params {
				k, v, ok := strings.Cut(p, "=")
				if !ok {
					return fmt.Errorf("%w: -p %q: use key=value", ErrUsage, p)
				}
				kv[k] = v
			}
			if len(args) == 0 {
				args = []string{"uname -a"}
			}
			return vmBoot(cmd.Context(), cmd, kv, strings.Join(args, " "))
		},
	}
	cmd.Flags().StringArrayVarP(&params, "param", "p", nil, "VM parameter key=value (repeatable)")
	// Everything after the first word of the command belongs to it.
	cmd.Flags().SetInterspersed(false)
	return cmd
}

func vmBoot(ctx context.Context, cmd *cobra.Command, params map[string]string, line string) (err error) {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	run := owner.NewRunID()
	cfg := vm.Config{Name: "vm", Namespace: owner.NamespaceName(run, "vm"), Logf: func(f string, a ...any) { _, _ = fmt.Fprintf(errOut, f, a...) }}
	if err := vm.ParseParams(&cfg, params); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	// Claimed like a network's run, so `hymn clean` finds the VM if hymn
	// is killed while it runs.
	if err := owner.Claim(run); err != nil {
		return err
	}
	defer func() {
		// Each is a no-op when there is nothing of it; a failure leaves
		// something behind and says what.
		err = errors.Join(err, netnsx.Delete(cfg.Namespace), vm.RemoveRunDirs(owner.Prefix+run+"-"), owner.Release(run))
	}()
	n, err := vm.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		t0 := time.Now()
		err = errors.Join(err, n.Delete())
		_, _ = fmt.Fprintf(errOut, "*** VM vm stopped in %.2f s\n", time.Since(t0).Seconds())
	}()
	res, err := n.Cmd(ctx, line)
	_, _ = fmt.Fprint(out, res)
	return err
}
