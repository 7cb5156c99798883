package daemon

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/control"
)

// notifySocket listens on a unixgram socket as systemd does and returns it
// with $NOTIFY_SOCKET pointing at it.
func notifySocket(t *testing.T) *net.UnixConn {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return c
}

// nextState reads datagrams until one that is not a watchdog ping, up to
// wait; it returns "" if none came. Pings are counted in pings.
func nextState(t *testing.T, c *net.UnixConn, wait time.Duration, pings *int) string {
	t.Helper()
	deadline := time.Now().Add(wait)
	buf := make([]byte, 4096)
	for {
		if err := c.SetReadDeadline(deadline); err != nil {
			t.Fatal(err)
		}
		n, err := c.Read(buf)
		if err != nil {
			return ""
		}
		msg := string(buf[:n])
		if msg == "WATCHDOG=1" {
			*pings++
			continue
		}
		return msg
	}
}

// TestSystemdNotify checks the sd_notify protocol: READY=1 once every agent
// started and the ready gate opened, watchdog pings at half
// $WATCHDOG_USEC, RELOADING=1 (with MONOTONIC_USEC) then READY=1 around a
// reload, STOPPING=1 at shutdown.
func TestSystemdNotify(t *testing.T) {
	c := notifySocket(t)
	t.Setenv("WATCHDOG_USEC", "100000")
	t.Setenv("WATCHDOG_PID", "")
	dir := t.TempDir()
	agent := func(name string) string {
		return fmt.Sprintf("[agent.%s]\ncomponent = %q\nstop_grace = \"50ms\"\n", name, wat(t, "spin"))
	}
	path := writeConfig(t, dir, header(t)+agent("one"))
	gate := make(chan struct{})
	r := serve(t, path, Options{ReadyGate: gate})
	r.waitAgent(t, "one", "running", isRunning)
	pings := 0
	if msg := nextState(t, c, 300*time.Millisecond, &pings); msg != "" {
		t.Fatalf("before the ready gate opened: %q", msg)
	}
	if pings == 0 {
		t.Error("no watchdog ping within 300ms with WATCHDOG_USEC=100ms")
	}
	close(gate)
	if msg := nextState(t, c, 10*time.Second, &pings); msg != "READY=1" {
		t.Fatalf("got %q, want READY=1", msg)
	}

	writeConfig(t, dir, header(t)+agent("one")+agent("two"))
	if err := r.d.Reload(); err != nil {
		t.Fatal(err)
	}
	if msg := nextState(t, c, 10*time.Second, &pings); !strings.HasPrefix(msg, "RELOADING=1\nMONOTONIC_USEC=") {
		t.Fatalf("got %q, want RELOADING=1 with MONOTONIC_USEC", msg)
	}
	if msg := nextState(t, c, 10*time.Second, &pings); msg != "READY=1" {
		t.Fatalf("after the reload: %q, want READY=1", msg)
	}
	r.stop(t)
	if msg := nextState(t, c, 10*time.Second, &pings); msg != "STOPPING=1" {
		t.Fatalf("at shutdown: %q, want STOPPING=1", msg)
	}
}

// TestNoSystemd serves without $NOTIFY_SOCKET: nothing to talk to, and
// nothing fails.
func TestNoSystemd(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	t.Setenv("WATCHDOG_USEC", "")
	dir := t.TempDir()
	r := serve(t, writeConfig(t, dir, header(t)+fmt.Sprintf("[agent.one]\ncomponent = %q\nrestart = \"never\"\n", wat(t, "ok"))))
	r.waitAgent(t, "one", "exited", func(a control.AgentStatus) bool { return a.State == "exited" })
	r.stop(t)
	if n := r.logs.FilterMessage("sd_notify failed").Len(); n != 0 {
		t.Errorf("%d sd_notify failures without systemd", n)
	}
}
