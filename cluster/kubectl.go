package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hymn-net/hymn/internal/owner"
)

// WorkerCapabilities are the only Linux capabilities a worker pod's
// container keeps (every other one is dropped, and the pod is not
// privileged), on both Kubernetes transports: this one and the hymn-kube
// controller. Each was found needed by running the worker's work (eBPF
// and bridge switches, routers, emulated links, VXLAN cut links, node
// commands) with all capabilities but it:
//
//   - NET_ADMIN: netlink (veth pairs, bridges, VXLAN devices, addresses,
//     routes, qdiscs), eBPF programs attached to interfaces, ethtool
//     offloads; without it no interface comes up.
//   - NET_RAW: the emulator's AF_PACKET ports and captures, and ping in
//     the nodes (Debian's ping carries the file capability, so exec fails
//     without it in the bounding set).
//   - SYS_ADMIN: setns into the nodes' network namespaces, the bind
//     mounts that name them under /run/netns, and making /proc/sys/net
//     writable (PrepareContainer); it also covers bpf() for the eBPF
//     switch, so BPF and PERFMON are not needed besides it.
//   - SYS_NICE: the emulator's forwarding threads run under SCHED_FIFO
//     (without it they fall back, silently, to normal priority and
//     forward less punctually).
//
// VM nodes are not covered: their taps need /dev/net/tun, which an
// unprivileged container does not get (runc 1.2 no longer allows it by
// default), and the image needs QEMU.
var WorkerCapabilities = []string{"NET_ADMIN", "NET_RAW", "SYS_ADMIN", "SYS_NICE"}

// WorkerAppArmorUnconfined and WorkerSeccompProfile are the rest of a
// worker container's security context. AppArmor's default container
// profile denies every mount and writes under /proc/sys/net, both of
// which a worker needs (named namespaces, per-node sysctls), so the
// container runs unconfined by AppArmor (on a host without AppArmor this
// changes nothing); the capabilities above still bound it. Seccomp keeps
// the runtime's default profile, which allows mount, setns, unshare and
// bpf to a holder of SYS_ADMIN.
const (
	WorkerAppArmorUnconfined = true
	WorkerSeccompProfile     = "RuntimeDefault"
)

// workerSecurityContext is the worker container's securityContext, as a
// manifest's map.
func workerSecurityContext() map[string]any {
	sc := map[string]any{
		"privileged":     false,
		"capabilities":   map[string]any{"drop": []string{"ALL"}, "add": WorkerCapabilities},
		"seccompProfile": map[string]any{"type": WorkerSeccompProfile},
	}
	if WorkerAppArmorUnconfined {
		sc["appArmorProfile"] = map[string]any{"type": "Unconfined"}
	}
	return sc
}

// Kubectl runs workers as pods of a Kubernetes cluster (unprivileged:
// WorkerCapabilities), through
// the kubectl command (so hymn itself links no Kubernetes client): per
// worker a ConfigMap with its spec and a pod running `hymn worker --spec
// /spec/spec.json` from Image, whose stdin/stdout (kubectl attach) carry
// the protocol. The worker's address is its pod IP (its eth0). Pods on the
// same node talk over the CNI bridge; the CNI's MTU must be 1550 for
// 1500-byte cut links (or the links need mtu=1450).
//
// This is the first Kubernetes transport: a controller with a Topology
// resource (issue 17) replaces kubectl calls with API server requests
// behind the same Transport interface.
type Kubectl struct {
	Kubectl    string // the kubectl program; "" for "kubectl"
	Kubeconfig string // "" for kubectl's default
	Namespace  string // "" for "default"
	// Image is the worker image (hymn's static binary as its entrypoint,
	// with bash, ip and ping); PullPolicy defaults to Never, for images
	// imported into the node's containerd.
	Image, PullPolicy string
	// Stderr receives kubectl's and the workers' diagnostics; nil drops.
	Stderr io.Writer
	// PodTimeout bounds the wait for a pod to run (0: 2 minutes).
	PodTimeout time.Duration
	// WorkerArgs are added to each pod's hymn worker command line
	// (--switch, --nodes).
	WorkerArgs []string

	mu    sync.Mutex
	run   string
	names []string // pods and configmaps made, by name
	// launches counts each worker's launches: a worker launched again
	// (Cluster.Replace) gets a pod of a new name, -r1, -r2...
	launches map[int]int
	conns    []*localConn
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func (k *Kubectl) kubectl(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	prog := k.Kubectl
	if prog == "" {
		prog = "kubectl"
	}
	full := append([]string{"--namespace", k.namespace()}, args...)
	if k.Kubeconfig != "" {
		full = append([]string{"--kubeconfig", k.Kubeconfig}, full...)
	}
	cmd := exec.CommandContext(ctx, prog, full...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kubectl %s: %v: %s", strings.Join(args[:min(2, len(args))], " "), err, clip(strings.TrimSpace(errb.String()), 400))
	}
	return out.Bytes(), nil
}

func (k *Kubectl) namespace() string {
	if k.Namespace == "" {
		return "default"
	}
	return k.Namespace
}

// Check validates the options, before anything is created.
func (k *Kubectl) Check() error {
	if k.Image == "" {
		return errors.New("kubernetes transport: no worker image")
	}
	if !dnsLabel.MatchString(k.namespace()) || len(k.namespace()) > 63 {
		return fmt.Errorf("kubernetes transport: namespace %q is not a DNS label", k.namespace())
	}
	switch k.PullPolicy {
	case "", "Never", "IfNotPresent", "Always":
	default:
		return fmt.Errorf("kubernetes transport: pull policy %q (use Never, IfNotPresent or Always)", k.PullPolicy)
	}
	return nil
}

// manifest is the ConfigMap and the pod of one worker.
func (k *Kubectl) manifest(name string, spec []byte) ([]byte, error) {
	pull := k.PullPolicy
	if pull == "" {
		pull = "Never"
	}
	labels := map[string]string{"app.kubernetes.io/name": "hymn-worker", "hymn.dev/run": k.run}
	list := map[string]any{
		"apiVersion": "v1", "kind": "List",
		"items": []any{
			map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": name, "labels": labels},
				"data":     map[string]string{"spec.json": string(spec)},
			},
			map[string]any{
				"apiVersion": "v1", "kind": "Pod",
				"metadata": map[string]any{"name": name, "labels": labels},
				"spec": map[string]any{
					"restartPolicy":                 "Never",
					"terminationGracePeriodSeconds": 30,
					// A worker talks to no API server: a token mounted in
					// it would only be one more thing for its nodes'
					// commands to read.
					"automountServiceAccountToken": false,
					"containers": []any{map[string]any{
						"name": "worker", "image": k.Image, "imagePullPolicy": pull,
						"args":  append([]string{"worker", "--spec", "/spec/spec.json"}, k.WorkerArgs...),
						"stdin": true, "stdinOnce": true,
						"securityContext": workerSecurityContext(),
						"volumeMounts":    []any{map[string]any{"name": "spec", "mountPath": "/spec", "readOnly": true}},
					}},
					"volumes": []any{map[string]any{"name": "spec", "configMap": map[string]any{"name": name}}},
				},
			},
		},
	}
	return json.Marshal(list)
}

// Launch creates the worker's ConfigMap and pod, waits until it runs and
// attaches to it.
func (k *Kubectl) Launch(ctx context.Context, spec *Spec) (Conn, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.Check(); err != nil {
		return nil, err
	}
	if k.run == "" {
		k.run = owner.NewRunID()
	}
	name := fmt.Sprintf("hymn-%s-w%d", k.run, spec.Worker)
	if k.launches == nil {
		k.launches = map[int]int{}
	}
	if n := k.launches[spec.Worker]; n > 0 {
		name += fmt.Sprintf("-r%d", n)
	}
	k.launches[spec.Worker]++
	data, err := spec.JSON()
	if err != nil {
		return nil, err
	}
	m, err := k.manifest(name, data)
	if err != nil {
		return nil, err
	}
	k.names = append(k.names, name)
	if _, err := k.kubectl(ctx, m, "create", "-f", "-"); err != nil {
		return nil, err
	}
	timeout := k.PodTimeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	if _, err := k.kubectl(ctx, nil, "wait", "--for=condition=Ready", "pod/"+name, "--timeout="+timeout.String()); err != nil {
		return nil, fmt.Errorf("worker %d's pod %s never ran: %w", spec.Worker, name, err)
	}
	prog := k.Kubectl
	if prog == "" {
		prog = "kubectl"
	}
	args := []string{"--namespace", k.namespace(), "attach", "-i", "-q", "-c", "worker", "pod/" + name}
	if k.Kubeconfig != "" {
		args = append([]string{"--kubeconfig", k.Kubeconfig}, args...)
	}
	cmd := exec.Command(prog, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if k.Stderr != nil {
		cmd.Stderr = &prefixWriter{w: k.Stderr, prefix: fmt.Sprintf("[worker %d] ", spec.Worker)}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &localConn{cmd: cmd, stdin: stdin, events: make(chan Event, 16), done: make(chan struct{}), worker: spec.Worker, grace: 30 * time.Second}
	go c.read(stdout)
	k.conns = append(k.conns, c)
	// The worker may have said "ready" before the attach stream existed
	// (attach shows no earlier output): ask for it again.
	if err := c.Send(Command{Cmd: "ready"}); err != nil {
		return nil, err
	}
	return c, nil
}

// Close stops the attach streams (the workers see their stdin end and tear
// down), then deletes the pods and ConfigMaps, waiting for them to go.
func (k *Kubectl) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	var errs []error
	for _, c := range k.conns {
		ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
		if err := c.Stop(ctx); err != nil && !strings.Contains(err.Error(), "exit status") {
			errs = append(errs, err)
		}
		cancel()
	}
	k.conns = nil
	if k.run != "" && len(k.names) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		_, err := k.kubectl(ctx, nil, "delete", "pod,configmap", "-l", "hymn.dev/run="+k.run, "--wait=true", "--ignore-not-found")
		cancel()
		errs = append(errs, err)
	}
	k.names = nil
	return errors.Join(errs...)
}
