package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/control/controltest"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

const fwdToken = "cluster-test-token"

// fwdHost is a daemon of the forwarding test with its control API on TCP.
type fwdHost struct {
	name string
	r    *running
	path string // its config file
	addr string
	ctl  *control.Client
}

// startFwdHost serves host name of a cluster on endpoints with agents, and
// its control API on TCP (the address it advertises, derived from
// control_listen).
func startFwdHost(t testing.TB, name string, endpoints []string, agents string) *fwdHost {
	t.Helper()
	addr := freePort(t)
	eps := `"` + strings.Join(endpoints, `", "`) + `"`
	cfg := header(t) + fmt.Sprintf("control_listen = %q\ncontrol_token = %q\n\n", addr, fwdToken) +
		fmt.Sprintf("[cluster]\nname = %q\nlease_ttl = \"4s\"\nsettle = \"200ms\"\nmoves_per_second = 100\nprefix = \"/fwd-test\"\netcd = { endpoints = [%s] }\n\n", name, eps) +
		agents
	path := writeConfig(t, mkdir(t, filepath.Join(t.TempDir(), name)), cfg)
	r := serve(t, path)
	controltest.Serve(t, control.Options{Backend: r.d, Messages: r.d.Messages(), KV: r.d.KV(), Listen: addr, Token: fwdToken})
	c, err := control.DialTCP(addr, fwdToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &fwdHost{name: name, r: r, path: path, addr: addr, ctl: c}
}

// settled waits until every host sees every host settled and the owners
// of the agents stayed the same for a second (the start's moves are over).
func settled(t testing.TB, hosts []*fwdHost) {
	t.Helper()
	settledMembers(t, hosts)
	last, since := "", time.Now()
	testenv.Eventually(t, 60*time.Second, "the placement to settle", func() bool {
		var owners string
		for _, h := range hosts {
			st, _ := h.r.d.Cluster()
			owners += fmt.Sprint(st.Owners)
		}
		if owners != last {
			last, since = owners, time.Now()
		}
		return time.Since(since) >= time.Second
	})
}

// settledMembers waits until every host sees every host settled, with
// its address.
func settledMembers(t testing.TB, hosts []*fwdHost) {
	t.Helper()
	testenv.Eventually(t, 60*time.Second, "every member settled in every view", func() bool {
		for _, h := range hosts {
			st, _ := h.r.d.Cluster()
			if len(st.Members) != len(hosts) {
				return false
			}
			for _, m := range st.Members {
				if !m.Settled || m.Address == "" {
					return false
				}
			}
		}
		return true
	})
}

// owner is the host that runs agent, once one does and every host's view
// agrees (nil after d).
func ownerOf(t testing.TB, hosts []*fwdHost, agent string) *fwdHost {
	t.Helper()
	var out *fwdHost
	testenv.Eventually(t, 60*time.Second, "an owner of "+agent+" every host agrees on", func() bool {
		out = nil
		for _, h := range hosts {
			st, _ := h.r.d.Cluster()
			if st.Owners[agent] == "" {
				return false
			}
			for _, o := range hosts {
				if o.name == st.Owners[agent] {
					if out != nil && out != o {
						return false
					}
					out = o
				}
			}
			if h.r.d.g.Cluster.Node.Owns(agent) && h.r.agent(t, agent).State != stateRunning {
				return false
			}
		}
		return out != nil
	})
	return out
}

func other(hosts []*fwdHost, h *fwdHost) *fwdHost {
	for _, o := range hosts {
		if o != h {
			return o
		}
	}
	return nil
}

// TestClusterForwarding: two daemons on embedded etcd, each with its
// control API on TCP. A message sent to the host that does not run the
// agent reaches the one that does, through the control API as JSON and as
// SSE, and the SSE stream resumes from Last-Event-ID against the receiving
// host; the original sender is forwarded (an agent that accepts only
// "mcp" takes an MCP message through the other host); an unknown agent is
// still 404; an idempotency key sent through the non-owner is delivered
// once and replayed on either host; an on-message agent is claimed by its placed host on its
// first message, not before. A reply streaming when its host stops ends with an error event
// (no hang), and the next message reaches the agent on its new host.
func TestClusterForwarding(t *testing.T) {
	e := etcdtest.Start(t, 1)
	agents := fmt.Sprintf(`[agent.echo]
component = %q
stop_grace = "1s"

[agent.mcpecho]
component = %q
accepts = ["mcp"]
stop_grace = "1s"

[agent.lazy]
component = %q
start = "on-message"
stop_grace = "1s"

[agent.held]
component = %q
input = '{"steps":[{"op":"recv-message","as":"m"},{"op":"reply-delta","id":"m","text":"part"},{"op":"recv"}]}'
stop_grace = "1s"
`, testenv.Agent(t, "agents", "echo"), testenv.Agent(t, "agents", "echo"), testenv.Agent(t, "agents", "echo"),
		testenv.Agent(t, "test-agents-qjs", "probe"))
	hosts := []*fwdHost{startFwdHost(t, "a", e.Endpoints(), agents), startFwdHost(t, "b", e.Endpoints(), agents)}
	settled(t, hosts)
	owner := ownerOf(t, hosts, "echo")
	via := other(hosts, owner)
	ctx := t.Context()
	t.Logf("echo runs on %s; messages go through %s", owner.name, via.name)

	// JSON through the non-owner.
	st, err := via.ctl.Send(ctx, "echo", "hello there", control.SendOptions{Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != message.StatusDone || st.Reply != "echo: hello there (session s1)" {
		t.Fatalf("JSON through %s: %+v", via.name, st)
	}
	if a := owner.r.agent(t, "echo"); len(a.Instances) != 1 || a.Instances[0].Messages != 1 {
		t.Errorf("the owner's echo answered %+v, want 1 message", a.Instances)
	}

	// The store is the cluster's: the non-owner lists echo's buckets (it
	// keeps none) although it does not run echo.
	if b, err := via.ctl.KVBuckets(ctx, "echo"); err != nil || len(b) != 0 {
		t.Errorf("kv ls echo through %s: %v, %v; want no buckets", via.name, b, err)
	}

	// An idempotency key through the non-owner: the receiving host claims
	// it in the cluster's ledger (the owner does not claim it again), the
	// message is delivered once, and a retry through either host gets the
	// first message's reply without a second delivery.
	keyed, err := via.ctl.Send(ctx, "echo", "only once", control.SendOptions{IdempotencyKey: "k-forwarded"})
	if err != nil || keyed.Status != message.StatusDone || keyed.Reply != "echo: only once" {
		t.Fatalf("a keyed message through %s: %+v, %v", via.name, keyed, err)
	}
	for _, h := range []*fwdHost{via, owner} {
		again, err := h.ctl.Send(ctx, "echo", "only once", control.SendOptions{IdempotencyKey: "k-forwarded"})
		if err != nil || again.ID != keyed.ID || again.Reply != keyed.Reply {
			t.Fatalf("the keyed message again through %s: %+v, %v; want %+v replayed", h.name, again, err, keyed)
		}
	}
	if a := owner.r.agent(t, "echo"); len(a.Instances) != 1 || a.Instances[0].Messages != 2 {
		t.Errorf("the owner's echo answered %+v, want 2 messages (the keyed one once)", a.Instances)
	}

	// SSE through the non-owner: the deltas, then the reply.
	var evs []message.Event
	st, err = via.ctl.SendStream(ctx, "echo", "one two three", control.SendOptions{}, func(ev message.Event) { evs = append(evs, ev) })
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, ev := range evs[:len(evs)-1] {
		if ev.Kind != message.KindDelta {
			t.Fatalf("event %+v before the last is not a delta: %+v", ev, evs)
		}
		text.WriteString(ev.Text)
	}
	if last := evs[len(evs)-1]; last.Kind != message.KindReply || last.Text != "echo: one two three" || text.String() != last.Text || len(evs) < 4 {
		t.Fatalf("SSE through %s: %+v", via.name, evs)
	}

	// Resume: read two events of a stream, drop it, pick it up after
	// Last-Event-ID 2 at the same (non-owning) host.
	id, first := postStream(t, via.addr, "echo", "resume me please", 2)
	s, err := via.ctl.Follow(ctx, "echo", id, 2)
	if err != nil {
		t.Fatal(err)
	}
	rest := []message.Event{}
	last := uint64(2)
	if ended, err := s.Read(&last, func(ev message.Event) { rest = append(rest, ev) }); !ended {
		t.Fatalf("resumed stream did not end: %v", err)
	}
	s.Close()
	if rest[0].Seq != 3 || rest[len(rest)-1].Kind != message.KindReply || rest[len(rest)-1].Text != "echo: resume me please" {
		t.Fatalf("resumed after 2 (%+v): %+v", first, rest)
	}

	// The original sender reaches the owner: mcpecho accepts only "mcp".
	mowner := ownerOf(t, hosts, "mcpecho")
	mvia := other(hosts, mowner)
	m, _, err := mvia.r.d.Messages().Send(ctx, message.Request{Agent: "mcpecho", Sender: message.SenderMCP, Content: "hi"})
	if err != nil {
		t.Fatalf("an mcp message to mcpecho through %s: %v", mvia.name, err)
	}
	if v := replyOf(t, m); v.Reply != "echo: hi" {
		t.Fatalf("mcpecho through %s: %+v", mvia.name, v)
	}
	if _, err := mvia.ctl.Send(ctx, "mcpecho", "hi", control.SendOptions{}); !errors.Is(err, control.ErrRefused) || !strings.Contains(err.Error(), "does not accept") {
		t.Errorf("an api message to mcpecho through %s: %v, want refused", mvia.name, err)
	}
	var ae *control.APIError
	if _, err := via.ctl.Send(ctx, "nobody", "hi", control.SendOptions{}); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("a message to an unknown agent: %v, want 404", err)
	}

	// An on-message agent: nobody holds it before its first message,
	// which, sent through the host it does not belong on, makes the host
	// it belongs on claim it.
	for _, h := range hosts {
		if st, _ := h.r.d.Cluster(); st.Owners["lazy"] != "" {
			t.Fatalf("%s sees lazy held by %s before any message", h.name, st.Owners["lazy"])
		}
	}
	placed := hosts[0].r.d.g.Cluster.Node.Place("lazy")
	lvia := hosts[0]
	if placed == lvia.name {
		lvia = hosts[1]
	}
	if st, err := lvia.ctl.Send(ctx, "lazy", "wake up", control.SendOptions{}); err != nil || st.Reply != "echo: wake up" {
		t.Fatalf("lazy through %s: %+v, %v", lvia.name, st, err)
	}
	for _, h := range hosts {
		testenv.Eventually(t, 10*time.Second, h.name+" seeing lazy on "+placed, func() bool {
			st, _ := h.r.d.Cluster()
			return st.Owners["lazy"] == placed
		})
	}

	// A reply streaming when its owner stops: the stream ends with an
	// error event; the next message reaches the agent on the other host.
	howner := ownerOf(t, hosts, "held")
	hvia := other(hosts, howner)
	got := make(chan message.Event, 16)
	done := make(chan error, 1)
	go func() {
		_, err := hvia.ctl.SendStream(ctx, "held", "wait", control.SendOptions{}, func(ev message.Event) { got <- ev })
		done <- err
	}()
	if ev := testenv.Recv(t, got, 30*time.Second, "the first delta of held"); ev.Text != "part" {
		t.Fatalf("held's first event: %+v", ev)
	}
	t.Logf("held runs on %s, which stops; its messages go through %s", howner.name, hvia.name)
	howner.r.stop(t)
	ev := testenv.Recv(t, got, 10*time.Second, "held's stream to end when its host stopped")
	if ev.Kind != message.KindError || ev.Code != "unavailable" {
		t.Fatalf("held's stream after its host stopped: %+v, want an unavailable error event", ev)
	}
	if err := testenv.Recv(t, done, 10*time.Second, "SendStream to return"); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := hvia.ctl.SendStream(ctx, "held", "again", control.SendOptions{}, func(ev message.Event) { got <- ev })
		done <- err
	}()
	select {
	case ev := <-got:
		if ev.Text != "part" {
			t.Fatalf("held on its new host: %+v", ev)
		}
	case err := <-done:
		t.Fatalf("held on its new host: %v", err)
	case <-time.After(40 * time.Second):
		for _, e := range hvia.r.logs.All() {
			t.Log(e.LoggerName, e.Message, e.ContextMap())
		}
		t.Fatalf("held on its new host: no event within 40s")
	}
	if !hvia.r.d.g.Cluster.Node.Owns("held") {
		t.Error("held answered but its new host does not hold it")
	}
}

// postStream posts content to agent at addr asking for SSE, reads n events
// and drops the connection; it returns the message id and the events' ids.
func postStream(t *testing.T, addr, agent, content string, n int) (string, []string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/v1/agents/"+agent+"/messages",
		strings.NewReader(fmt.Sprintf(`{"content": %q}`, content)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+fwdToken)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST: %s", resp.Status)
	}
	var ids []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && len(ids) < n {
		if v, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			ids = append(ids, v)
		}
	}
	return resp.Header.Get(control.HeaderMessageID), ids
}

// TestClusterUnreachableWarnings: a cluster host with no address to
// publish, or no control token to forward with, says so at start.
func TestClusterUnreachableWarnings(t *testing.T) {
	for _, tc := range []struct {
		name, host string
		want       []string
	}{
		{"no address, no token", "", []string{"publishes no control API address", "no [host] control_token"}},
		{"wildcard listen", "control_listen = \"0.0.0.0:7070\"\ncontrol_token = \"t\"\n", []string{"publishes no control API address"}},
		{"advertised", "control_listen = \"0.0.0.0:7070\"\ncontrol_token = \"t\"\n\n[cluster]\nadvertise = \"http://10.0.0.5:7070\"\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := "[cluster]\n"
			if strings.Contains(tc.host, "[cluster]") {
				cluster = ""
			}
			cfg := header(t) + tc.host + "\n" + cluster + "name = \"a\"\netcd = { endpoints = [\"http://127.0.0.1:1\"] }\n"
			path := writeConfig(t, t.TempDir(), cfg)
			c, err := config.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			obs, logs := observer.New(zapcore.WarnLevel)
			d, err := New(path, c, Options{Log: zap.New(obs)})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			var warned []string
			for _, e := range logs.All() {
				warned = append(warned, e.Message)
			}
			all := strings.Join(warned, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("no warning %q in:\n%s", w, all)
				}
			}
			if tc.want == nil && strings.Contains(all, "control API address") {
				t.Errorf("warned with an advertised address:\n%s", all)
			}
		})
	}
}

// TestClusterJoinMidReply: replies stream through the host that does not
// run their agents when a third host joins and takes some of them: each
// moved agent's reply ends with an error event (its instance stopped for
// the hand over), the others' stay open, and the next message of a moved
// agent reaches it on the new host.
func TestClusterJoinMidReply(t *testing.T) {
	const n = 8
	e := etcdtest.Start(t, 1)
	var agents strings.Builder
	for i := range n {
		fmt.Fprintf(&agents, "[agent.h%d]\ncomponent = %q\ninput = '%s'\nstop_grace = \"1s\"\n\n", i, testenv.Agent(t, "test-agents-qjs", "probe"),
			`{"steps":[{"op":"recv-message","as":"m"},{"op":"reply-delta","id":"m","text":"part"},{"op":"recv"}]}`)
	}
	hosts := []*fwdHost{startFwdHost(t, "a", e.Endpoints(), agents.String()), startFwdHost(t, "b", e.Endpoints(), agents.String())}
	settled(t, hosts)
	type stream struct {
		agent string
		via   *fwdHost
		evs   chan message.Event
	}
	var streams []stream
	for i := range n {
		agent := fmt.Sprintf("h%d", i)
		s := stream{agent: agent, via: other(hosts, ownerOf(t, hosts, agent)), evs: make(chan message.Event, 8)}
		go func() {
			_, _ = s.via.ctl.SendStream(t.Context(), agent, "first", control.SendOptions{}, func(ev message.Event) { s.evs <- ev })
		}()
		if ev := testenv.Recv(t, s.evs, 30*time.Second, agent+"'s first delta"); ev.Text != "part" {
			t.Fatalf("%s: %+v", agent, ev)
		}
		streams = append(streams, s)
	}
	before := map[string]string{}
	st, _ := hosts[0].r.d.Cluster()
	for a, h := range st.Owners {
		before[a] = h
	}
	hosts = append(hosts, startFwdHost(t, "c", e.Endpoints(), agents.String()))
	settled(t, hosts)
	st, _ = hosts[0].r.d.Cluster()
	moved := 0
	for _, s := range streams {
		if st.Owners[s.agent] == before[s.agent] {
			select {
			case ev := <-s.evs:
				t.Errorf("%s stayed on %s but its reply got %+v", s.agent, before[s.agent], ev)
			default:
			}
			continue
		}
		moved++
		ev := testenv.Recv(t, s.evs, 10*time.Second, s.agent+"'s reply to end after it moved")
		if ev.Kind != message.KindError || ev.Code != "unavailable" {
			t.Errorf("%s moved from %s to %s: %+v, want an unavailable error event", s.agent, before[s.agent], st.Owners[s.agent], ev)
		}
		// Its next message reaches it on the new host: a new instance
		// takes it as its first (a delta), through the same host.
		go func() {
			_, _ = s.via.ctl.SendStream(t.Context(), s.agent, "again", control.SendOptions{}, func(ev message.Event) { s.evs <- ev })
		}()
		if ev := testenv.Recv(t, s.evs, 30*time.Second, s.agent+" on "+st.Owners[s.agent]); ev.Text != "part" {
			t.Errorf("%s on its new host: %+v", s.agent, ev)
		}
	}
	t.Logf("%d of %d agents moved to c with their replies open", moved, n)
	if moved == 0 {
		t.Fatal("no agent moved to c: the test checked nothing (choose other names)")
	}
}
