// Package controltest provides an in-memory control.Backend and a helper
// that runs a real control.Server on a unix socket in a temporary
// directory, for the tests of the control API, the metrics and the CLI.
package controltest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/control"
)

// Backend is a control.Backend over fixed agents and toolings. Start, stop
// and restart change an agent's state as a daemon would; an agent named
// "conflict" refuses every action with control.ErrConflict, one named
// "busy" with control.ErrUnavailable, one named "broken" with a plain error. Block, when set, makes every action wait for
// it to be closed (after sending the agent's name on Entered).
type Backend struct {
	mu        sync.Mutex
	agents    []control.AgentStatus
	toolings  []control.ToolingStatus
	ready     bool
	reloadErr error
	reloads   int
	actions   []string // "start a", ...
	elsewhere []string // configured, not listed (held by another host)

	Block   chan struct{}
	Entered chan string
}

// NewBackend returns a Backend with the agents "a" (running) and "b"
// (stopped) and the toolings "fs" (connected) and "web" (connecting),
// not ready.
func NewBackend() *Backend {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return &Backend{
		agents: []control.AgentStatus{
			{Name: "a", Component: "/agents/a.wasm", Toolings: []string{"fs"}, State: "running", Restarts: 2, Traps: 1, Inbox: 3, Since: since},
			{Name: "b", Component: "/agents/b.wasm", Toolings: []string{"fs", "web"}, State: "stopped", LastError: "exited with err: nope", Since: since},
		},
		toolings: []control.ToolingStatus{
			{Name: "fs", Kind: "mcp", Transport: "stdio", State: "connected", ConnectedOnce: true, ServerName: "secure-filesystem-server",
				ServerVersion: "0.2.0", Tools: 14, InFlight: 1, Restarts: 0},
			{Name: "web", Kind: "mcp", Transport: "http", State: "connecting", Restarts: 5, LastError: "connection refused"},
		},
	}
}

// SetReady sets what Ready reports.
func (b *Backend) SetReady(r bool) { b.mu.Lock(); b.ready = r; b.mu.Unlock() }

// SetReloadError sets what Reload returns.
func (b *Backend) SetReloadError(err error) { b.mu.Lock(); b.reloadErr = err; b.mu.Unlock() }

// AddAgent adds an agent.
func (b *Backend) AddAgent(a control.AgentStatus) {
	b.mu.Lock()
	b.agents = append(b.agents, a)
	b.mu.Unlock()
}

// AddElsewhere adds an agent of the config that Agents does not list, as
// one another cluster host runs.
func (b *Backend) AddElsewhere(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.elsewhere = append(b.elsewhere, name)
}

// Configured implements control.ConfigBackend: the agents listed and
// those added with AddElsewhere.
func (b *Backend) Configured(name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Contains(b.elsewhere, name) ||
		slices.ContainsFunc(b.agents, func(a control.AgentStatus) bool { return a.Name == name })
}

// AddTooling adds a tooling to the list Toolings returns.
func (b *Backend) AddTooling(t control.ToolingStatus) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.toolings = append(b.toolings, t)
}

// Actions returns the actions performed, e.g. "restart a", "reload".
func (b *Backend) Actions() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.actions)
}

// Agents implements control.Backend.
func (b *Backend) Agents() []control.AgentStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := slices.Clone(b.agents)
	for i := range out {
		out[i].Toolings = slices.Clone(out[i].Toolings)
	}
	return out
}

// Toolings implements control.Backend.
func (b *Backend) Toolings() []control.ToolingStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.toolings)
}

// StartAgent implements control.Backend.
func (b *Backend) StartAgent(name string) error { return b.act("start", name) }

// StopAgent implements control.Backend.
func (b *Backend) StopAgent(name string) error { return b.act("stop", name) }

// RestartAgent implements control.Backend.
func (b *Backend) RestartAgent(name string) error { return b.act("restart", name) }

func (b *Backend) act(action, name string) error {
	if b.Block != nil {
		if b.Entered != nil {
			b.Entered <- name
		}
		<-b.Block
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	i := slices.IndexFunc(b.agents, func(a control.AgentStatus) bool { return a.Name == name })
	if i < 0 {
		return control.ErrUnknownAgent
	}
	switch name {
	case "conflict":
		return fmt.Errorf("agent %s is stopping: %w", name, control.ErrConflict)
	case "broken":
		return errors.New("component failed to load: bad magic")
	case "busy":
		return fmt.Errorf("the daemon is shutting down: %w", control.ErrUnavailable)
	}
	b.actions = append(b.actions, action+" "+name)
	a := &b.agents[i]
	switch action {
	case "start":
		a.State = "running"
	case "stop":
		a.State = "stopped"
	case "restart":
		a.State = "running"
		a.Restarts++
	}
	return nil
}

// Reload implements control.Backend.
func (b *Backend) Reload() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.actions = append(b.actions, "reload")
	b.reloads++
	return b.reloadErr
}

// Ready implements control.Backend.
func (b *Backend) Ready() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ready
}

// TempDir returns a new short directory (socket paths are limited to 107
// bytes) with mode 0755, so that other users may reach a socket in it; the
// test removes it.
func TempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "th")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Serve runs a control.Server with opts until the test ends; with no
// opts.Socket it listens on toolhostd.sock in a TempDir. It returns once the
// server listens.
func Serve(t testing.TB, opts control.Options) *control.Server {
	t.Helper()
	if opts.Socket == "" {
		opts.Socket = filepath.Join(TempDir(t), "toolhostd.sock")
	}
	s, err := control.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var serveErr error
	go func() {
		defer close(done)
		serveErr = s.Serve(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
			if serveErr != nil {
				t.Errorf("Serve: %v", serveErr)
			}
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return after cancel")
		}
	})
	select {
	case <-s.Listening():
	case <-done:
		t.Fatalf("Serve: %v", serveErr)
	case <-time.After(30 * time.Second):
		t.Fatal("the control server did not start listening")
	}
	return s
}
