// Package tools knows which Debian package provides each program hymn, its
// tests or its documented features run, so that "not installed" errors say
// what to install.
package tools

import (
	"errors"
	"fmt"
	"os/exec"
)

// ErrMissing is wrapped by every missing-program error.
var ErrMissing = errors.New("required program missing")

// Packages maps a program to the Debian package that installs it. Keep it in
// step with the package list in scripts/setup.sh.
var Packages = map[string]string{
	"ip":                 "iproute2",
	"tc":                 "iproute2",
	"bridge":             "iproute2",
	"ping":               "iputils-ping",
	"iperf3":             "iperf3",
	"ethtool":            "ethtool",
	"ifconfig":           "net-tools",
	"route":              "net-tools",
	"iptables":           "iptables",
	"nft":                "nftables", // a split network's tunnel filter (cluster)
	"sysctl":             "procps",
	"ps":                 "procps",
	"setpriv":            "util-linux",
	"nsenter":            "util-linux",
	"bash":               "bash",
	"mn":                 "mininet",
	"brctl":              "bridge-utils",
	"ovs-vswitchd":       "openvswitch-switch",
	"ovsdb-server":       "openvswitch-switch",
	"ovs-vsctl":          "openvswitch-switch",
	"ovs-ofctl":          "openvswitch-switch",
	"ovs-testcontroller": "openvswitch-testcontroller",
	"qemu-system-x86_64": "qemu-system-x86",
	"busybox":            "busybox-static",
	"xz":                 "xz-utils",
	"pkg-config":         "pkg-config",
	"dot":                "graphviz",
	"python3":            "python3",
	"tcpdump":            "tcpdump",
	"tshark":             "tshark",
	"tmux":               "tmux",
	"gcc":                "gcc",
	"git":                "git",
	"time":               "time",
	"debootstrap":        "debootstrap",
	"dpdk-testpmd":       "dpdk-dev",
	"etcd":               "etcd-server",
	"containerd":         "containerd",
	"ctr":                "containerd",
	"runc":               "runc",
	"openssl":            "openssl",
	"chromium":           "chromium", // the live view's browser tests (ui)
}

// Package returns the Debian package for a program, or "" if unknown.
func Package(program string) string { return Packages[program] }

// Missing returns the error for a program that is not on PATH: it names the
// package to install when one is known.
func Missing(program string) error {
	if pkg := Packages[program]; pkg != "" {
		return fmt.Errorf("%w: %s is not installed (apt-get install %s)", ErrMissing, program, pkg)
	}
	return fmt.Errorf("%w: %s is not installed (not found on PATH)", ErrMissing, program)
}

// Check returns the Missing error for the first program not on PATH.
func Check(programs ...string) error {
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			return Missing(p)
		}
	}
	return nil
}
