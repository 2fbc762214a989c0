// Package agent defines the protocol between hymn and its guest agent, the
// small static program that runs inside every VM node and gives it the same
// command semantics as a namespace node.
//
// The channel is a virtio-serial port named PortName. Each side writes a
// stream of JSON objects (one per line): the host sends Requests, the agent
// answers each with exactly one Response carrying the same ID. Requests run
// concurrently in the guest, so a long Exec does not block a Cmd, and a
// Cancel names the ID of the request to stop. Byte fields travel as base64,
// as encoding/json does for []byte, so binary output survives.
package agent

// PortName is the name of the virtserialport the agent listens on; in the
// guest it appears under /sys/class/virtio-ports/*/name.
const PortName = "org.hymn.agent.0"

// HostFSTag is the 9p mount tag under which hymn shares a host directory
// (by default /) with the guest; the agent mounts it read-only at /host.
const HostFSTag = "hymn.hostfs"

// Operations.
const (
	OpPing     = "ping"     // is the agent up? Response.Info holds the kernel release
	OpExec     = "exec"     // run Argv (Stdin, Dir, Env) and wait
	OpShell    = "shell"    // run Line in the persistent shell
	OpCancel   = "cancel"   // stop the request whose ID is Target
	OpIntf     = "intf"     // find the interface with MAC, rename to Name, add Addrs, set Up
	OpLinkUp   = "linkup"   // set interface Name administratively up or down (Up)
	OpWrite    = "write"    // write Data to Path with Mode
	OpRead     = "read"     // return the content of Path in Data
	OpPoweroff = "poweroff" // sync and power the guest off (no Response is guaranteed)
)

// Request is one call from the host.
type Request struct {
	ID     uint64   `json:"id"`
	Op     string   `json:"op"`
	Argv   []string `json:"argv,omitempty"`
	Env    []string `json:"env,omitempty"`
	Dir    string   `json:"dir,omitempty"`
	Stdin  []byte   `json:"stdin,omitempty"`
	Line   string   `json:"line,omitempty"`
	Target uint64   `json:"target,omitempty"`
	MAC    string   `json:"mac,omitempty"`
	Name   string   `json:"name,omitempty"`
	Addrs  []string `json:"addrs,omitempty"` // CIDR prefixes
	Up     bool     `json:"up,omitempty"`
	MTU    int      `json:"mtu,omitempty"` // OpIntf: 0 keeps the default
	// Stream asks OpShell to send output as it comes, in Responses with
	// More set, before the final Response.
	Stream bool   `json:"stream,omitempty"`
	Path   string `json:"path,omitempty"`
	Data   []byte `json:"data,omitempty"`
	Mode   uint32 `json:"mode,omitempty"`
	// TimeoutMS bounds waits inside the guest (OpIntf waiting for a
	// hot-plugged NIC to appear); 0 means the agent's default.
	TimeoutMS int `json:"timeout_ms,omitempty"`
}

// Response answers the Request with the same ID.
type Response struct {
	ID uint64 `json:"id"`
	// Exit is the exit status of OpExec and OpShell (-1 when the program
	// did not run to its end).
	Exit   int    `json:"exit"`
	Stdout []byte `json:"stdout,omitempty"` // OpShell: stdout and stderr interleaved
	Stderr []byte `json:"stderr,omitempty"`
	Data   []byte `json:"data,omitempty"`
	Info   string `json:"info,omitempty"`
	// Error is set when the operation failed (as opposed to a program that
	// ran and exited non-zero). Canceled is set when a Cancel stopped it.
	Error    string `json:"error,omitempty"`
	Canceled bool   `json:"canceled,omitempty"`
	// More marks a partial Response of a streamed request: Stdout holds
	// the next piece of output, and the final Response follows.
	More bool `json:"more,omitempty"`
}
