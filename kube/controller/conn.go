package controller

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/hymn-net/hymn/cluster"
	corev1 "k8s.io/api/core/v1"
)

// AttachFunc opens a worker pod's stdin and stdout (the worker protocol).
// Closing stdin ends the worker (its container has stdinOnce); closing
// stdout aborts the stream.
type AttachFunc func(ctx context.Context, pod *corev1.Pod) (stdin io.WriteCloser, stdout io.ReadCloser, err error)

// podTransport is a cluster.Transport over pods the controller already
// made: Launch attaches to worker i's pod (a worker launched again by
// cluster.Replace, to the pod setPod gave it).
type podTransport struct {
	attach AttachFunc

	mu    sync.Mutex
	pods  []*corev1.Pod // by worker number
	conns []*streamConn
	names []string // each conn's pod, by conn
}

// setPod makes pod worker i's, for its next launch.
func (p *podTransport) setPod(i int, pod *corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i >= 0 && i < len(p.pods) {
		p.pods[i] = pod
	}
}

func (p *podTransport) Launch(ctx context.Context, spec *cluster.Spec) (cluster.Conn, error) {
	p.mu.Lock()
	if spec.Worker < 0 || spec.Worker >= len(p.pods) || p.pods[spec.Worker] == nil {
		p.mu.Unlock()
		return nil, fmt.Errorf("no pod for worker %d", spec.Worker)
	}
	pod := p.pods[spec.Worker]
	p.mu.Unlock()
	in, out, err := p.attach(ctx, pod)
	if err != nil {
		return nil, fmt.Errorf("attaching to worker pod %s: %w", pod.Name, err)
	}
	c := newStreamConn(spec.Worker, in, out)
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.names = append(p.names, pod.Name)
	p.mu.Unlock()
	// The worker may have said "ready" before the stream existed (attach
	// shows no earlier output): ask again.
	if err := c.Send(cluster.Command{Cmd: "ready"}); err != nil {
		// The stream is gone already: say why, not that a pipe closed.
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
		}
		if se := c.streamErr(); se != nil {
			err = se
		}
		c.close()
		return nil, fmt.Errorf("attaching to worker pod %s: %w", pod.Name, err)
	}
	return c, nil
}

// streamErrors describes the streams that ended with an error, by pod.
func (p *podTransport) streamErrors() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for i, c := range p.conns {
		if err := c.streamErr(); err != nil {
			out = append(out, fmt.Sprintf("pod %s: %v", p.names[i], err))
		}
	}
	return strings.Join(out, "; ")
}

// Close ends every stream (the workers see their stdin end and tear down).
func (p *podTransport) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.close()
	}
	return nil // the conns stay, for streamErrors
}

// streamConn is cluster.Conn over a worker's stdin and stdout.
type streamConn struct {
	worker int
	stdin  io.WriteCloser
	stdout io.ReadCloser
	events chan cluster.Event
	done   chan struct{}
	wmu    sync.Mutex
	once   sync.Once
	mu     sync.Mutex
	rerr   error // the stream's error (attach failed, connection lost)
}

func newStreamConn(worker int, stdin io.WriteCloser, stdout io.ReadCloser) *streamConn {
	c := &streamConn{worker: worker, stdin: stdin, stdout: stdout, events: make(chan cluster.Event, 16), done: make(chan struct{})}
	go c.read()
	return c
}

func (c *streamConn) read() {
	defer close(c.done)
	defer close(c.events)
	sc := bufio.NewScanner(c.stdout)
	sc.Buffer(make([]byte, 64<<10), cluster.MaxLine)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var e cluster.Event
		if err := json.Unmarshal(line, &e); err != nil || e.Event == "" {
			// Not a protocol line (a stray print): ignored, as the
			// coordinator's reader does with lines it cannot use.
			continue
		}
		c.events <- e
	}
	c.mu.Lock()
	c.rerr = sc.Err()
	c.mu.Unlock()
}

// streamErr is why the stream ended, if it ended with an error.
func (c *streamConn) streamErr() error {
	select {
	case <-c.done:
	default:
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rerr
}

func (c *streamConn) Send(cmd cluster.Command) error {
	b, err := json.Marshal(cmd)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("worker %d: %w", c.worker, err)
	}
	return nil
}

func (c *streamConn) Events() <-chan cluster.Event { return c.events }

// Stop sends stop, ends stdin and waits for the worker's stream to end,
// aborting it when ctx ends first.
func (c *streamConn) Stop(ctx context.Context) error {
	// A failed send means the stream has ended already; the wait below
	// then returns at once.
	_ = c.Send(cluster.Command{Cmd: "stop"})
	// Closing stdin is part of the request; an error means the stream is
	// gone already, which the wait below sees too.
	c.wmu.Lock()
	_ = c.stdin.Close()
	c.wmu.Unlock()
	for {
		select {
		case _, ok := <-c.events:
			if !ok {
				<-c.done
				c.close()
				return nil
			}
		case <-ctx.Done():
			c.close()
			return fmt.Errorf("worker %d did not stop: %w", c.worker, ctx.Err())
		}
	}
}

func (c *streamConn) close() {
	// Ends the stream: best effort, there is nothing left to read or
	// write on it.
	c.once.Do(func() {
		c.wmu.Lock()
		_ = c.stdin.Close()
		c.wmu.Unlock()
		_ = c.stdout.Close()
	})
}
