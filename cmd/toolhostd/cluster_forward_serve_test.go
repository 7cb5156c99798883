package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tracing"
)

// TestClusterForwardServe runs two `toolhostd serve` processes as one
// cluster, each with its control API on TCP: `toolhostd send` to the host
// that does not run an agent gets the agent's reply from the other, and
// the message is one trace across both hosts (the owner's invoke_agent a
// child of the forwarding host's); a
// reply streaming through one host when the other, which runs the agent,
// is killed (-9) ends with an unavailable error event within a bound (no
// hang), and the next message reaches the agent on the surviving host.
func TestClusterForwardServe(t *testing.T) {
	const ttl = 3 * time.Second
	const token = "serve-forward-token"
	noConfig(t)
	e := etcdtest.Start(t, 1)
	held, err := json.Marshal(map[string]any{"steps": []map[string]any{
		{"op": "recv-message", "as": "m"}, {"op": "reply-delta", "id": "m", "text": "part"}, {"op": "recv"}}})
	if err != nil {
		t.Fatal(err)
	}
	agents := fmt.Sprintf("[agent.echo]\ncomponent = %q\nstop_grace = \"1s\"\n\n[agent.held]\ncomponent = %q\ninput = %q\nstop_grace = \"1s\"\n",
		testenv.Agent(t, "agents", "echo"), testenv.Agent(t, "test-agents-qjs", "probe"), held)
	dir, err := os.MkdirTemp("", "i33fs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	cache := filepath.Join(testenv.Root(t), "build", "test-cache")
	eps, _ := json.Marshal(e.Endpoints())
	type host struct {
		name, addr string
		proc       *serveProc
		ctl        *control.Client
	}
	start := func(name string) *host {
		t.Helper()
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		cfg := fmt.Sprintf("version = 1\n[host]\ncontrol_socket = %q\ncache_dir = %q\ncontrol_listen = %q\ncontrol_token = %q\ntraces = {}\n\n"+
			"[cluster]\nname = %q\nlease_ttl = \"%s\"\nsettle = \"500ms\"\netcd = { endpoints = %s }\n\n%s",
			filepath.Join(dir, name+".sock"), cache, addr, token, name, ttl, eps, agents)
		p := startServe(t, writeConfigFile(t, dir, name+".toml", cfg))
		var c *control.Client
		waitFor(t, 60*time.Second, func() bool {
			c, err = control.DialTCP(addr, token)
			return err == nil
		}, p.out)
		t.Cleanup(func() { _ = c.Close() })
		return &host{name: name, addr: addr, proc: p, ctl: c}
	}
	hosts := map[string]*host{"a": start("a"), "b": start("b")}
	// Settled: both hosts see both members with an address, and the same
	// owners, unchanged for a second.
	var owners map[string]string
	last, since := "", time.Now()
	waitFor(t, 60*time.Second, func() bool {
		var views []string
		for _, h := range hosts {
			st, err := h.ctl.Cluster(t.Context())
			if err != nil || len(st.Members) != 2 || len(st.Owners) != 2 {
				return false
			}
			for _, m := range st.Members {
				if !m.Settled || m.Address == "" {
					return false
				}
			}
			owners = st.Owners
			views = append(views, fmt.Sprint(st.Owners))
		}
		if views[0] != views[1] {
			return false
		}
		if views[0] != last {
			last, since = views[0], time.Now()
		}
		return time.Since(since) >= time.Second
	}, hosts["a"].proc.out)
	notOwner := func(agent string) *host {
		for name, h := range hosts {
			if name != owners[agent] {
				return h
			}
		}
		return nil
	}

	// toolhostd send to the host that does not run echo.
	via := notOwner("echo")
	code, out, errOut := runCLI(t, "send", "--addr", via.addr, "--token", token, "--session", "s9", "echo", "hello there")
	if code != 0 || out != "echo: hello there (session s9)\n" {
		t.Fatalf("send echo through %s (echo on %s): exit %d, %q, %s", via.name, owners["echo"], code, out, errOut)
	}

	// One trace across the hosts: the owner's message is a child of the
	// forwarding host's, each host keeping its own spans of it.
	st := sendWait(t, t.Context(), via.ctl, "echo", "traced")
	if st.TraceID == "" {
		t.Fatalf("no trace id: %+v", st)
	}
	spanOf := func(h *host) tracing.Span {
		t.Helper()
		tr, err := h.ctl.Trace(t.Context(), st.TraceID)
		if err != nil {
			t.Fatalf("trace %s on %s: %v", st.TraceID, h.name, err)
		}
		for _, s := range tr.Spans {
			if s.Name == "invoke_agent echo" && s.Attributes[string(tracing.AttrMessageID)] == st.ID {
				return s
			}
		}
		t.Fatalf("no invoke_agent echo span of message %s on %s: %+v", st.ID, h.name, tr.Spans)
		return tracing.Span{}
	}
	first, second := spanOf(via), spanOf(hosts[owners["echo"]])
	if second.ParentID != first.SpanID || first.ParentID != "" {
		t.Fatalf("span on %s (the owner) has parent %q, want %q, the span on %s (parent %q)",
			owners["echo"], second.ParentID, first.SpanID, via.name, first.ParentID)
	}

	// kill -9 of held's host while its reply streams through the other.
	hvia, hown := notOwner("held"), hosts[owners["held"]]
	t.Logf("echo on %s, held on %s", owners["echo"], hown.name)
	got := make(chan message.Event, 16)
	done := make(chan error, 2)
	go func() {
		_, err := hvia.ctl.SendStream(t.Context(), "held", "wait", control.SendOptions{}, func(ev message.Event) { got <- ev })
		done <- err
	}()
	if ev := testenv.Recv(t, got, 30*time.Second, "held's first delta"); ev.Text != "part" {
		t.Fatalf("held's first event: %+v", ev)
	}
	killed := time.Now()
	if err := hown.proc.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-hown.proc.exited
	ev := testenv.Recv(t, got, ttl+5*time.Second, "the stream to end after its agent's host was killed")
	failed := time.Since(killed)
	if ev.Kind != message.KindError || ev.Code != "unavailable" {
		t.Fatalf("after kill -9 of %s: %+v, want an unavailable error event", hown.name, ev)
	}
	if err := testenv.Recv(t, done, 10*time.Second, "SendStream to return"); err != nil {
		t.Fatal(err)
	}
	t.Logf("kill -9 of %s mid-reply: the stream through %s ended after %s: %s", hown.name, hvia.name, failed.Round(time.Millisecond), ev.Text)
	if !strings.Contains(ev.Text, hown.name) {
		t.Errorf("the error event does not name the host: %q", ev.Text)
	}

	// The next message waits for held's next host (the survivor, once the
	// killed host's lease expired) and reaches it.
	sent := time.Now()
	go func() {
		_, err := hvia.ctl.SendStream(t.Context(), "held", "again", control.SendOptions{}, func(ev message.Event) { got <- ev })
		done <- err
	}()
	select {
	case ev := <-got:
		if ev.Text != "part" {
			t.Fatalf("held on %s: %+v", hvia.name, ev)
		}
	case err := <-done:
		t.Fatalf("held after the kill: %v\n%s", err, tail(hvia.proc.out.String(), 4000))
	case <-time.After(ttl + 30*time.Second):
		t.Fatalf("held after the kill: no reply\n%s", tail(hvia.proc.out.String(), 4000))
	}
	t.Logf("the next message reached held on %s %s after it was sent", hvia.name, time.Since(sent).Round(time.Millisecond))
}
