package daemon

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// fixture020 decompresses the componentize-js probe built against
// toolhost:agent@0.2.0 (internal/host/testdata/v0.2.0): a component that
// cannot receive messages.
func fixture020(t *testing.T) string {
	t.Helper()
	f, err := os.Open(filepath.Join(testenv.Root(t), "internal", "host", "testdata", "v0.2.0", "probe-test-agents.wasm.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "probe-v020.wasm")
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := io.Copy(w, zr); err != nil {
		t.Fatal(err)
	}
	return out
}

func send(t *testing.T, r *running, agent, session, content string) (*message.Message, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m, _, err := r.d.Messages().Send(ctx, message.Request{Agent: agent, Session: session, Sender: message.SenderAPI, Content: content})
	return m, err
}

func replyOf(t *testing.T, m *message.Message) message.View {
	t.Helper()
	select {
	case <-m.Done():
	case <-time.After(60 * time.Second):
		t.Fatalf("no reply to %s within 60s: %+v", m.ID(), m.View())
	}
	return m.View()
}

func mustReply(t *testing.T, r *running, agent, session, content, want string) {
	t.Helper()
	m, err := send(t, r, agent, session, content)
	if err != nil {
		t.Fatalf("send %q to %s: %v", content, agent, err)
	}
	if v := replyOf(t, m); v.Status != message.StatusDone || v.Reply != want {
		t.Fatalf("reply of %s to %q: %+v, want %q", agent, content, v, want)
	}
}

// TestMessagesSingle: a single agent answers messages in its one
// instance; accepts and sends_to are checked before delivery; a message to
// an agent that cannot receive messages is refused (unsupported); an agent
// sends to another and gets its reply.
func TestMessagesSingle(t *testing.T) {
	cfg := header(t) + fmt.Sprintf(`
[agent.echo]
component = %q
accepts = ["api", "agent:boss"]

[agent.mcponly]
component = %q
accepts = ["mcp"]

[agent.old]
component = %q
input = '{"steps":[{"op":"recv"}]}'

[agent.boss]
component = %q
start = "on-message"
sends_to = ["echo"]
input = '{"steps":[{"op":"recv-message","as":"m"},{"op":"send","to":"echo","content":"via boss","as":"q"},{"op":"recv-reply","id":"q","timeout":30000},{"op":"send","to":"old","content":"x"},{"op":"reply","id":"m","content":"done"},{"op":"recv"}]}'
`, testenv.Agent(t, "agents", "echo"), testenv.Agent(t, "agents", "echo"), fixture020(t), testenv.Agent(t, "test-agents", "probe"))
	r := serve(t, writeConfig(t, t.TempDir(), cfg))
	r.waitAgent(t, "echo", "running", func(a control.AgentStatus) bool { return a.State == stateRunning })
	mustReply(t, r, "echo", "", "hello there", "echo: hello there")
	mustReply(t, r, "echo", "s1", "again", "echo: again (session s1)")
	if a := r.agent(t, "echo"); len(a.Instances) != 1 || a.Instances[0].Messages != 2 {
		t.Fatalf("echo's instances %+v: want one that answered 2", a.Instances)
	}
	for _, tc := range []struct {
		agent    string
		sentinel error
	}{
		{"mcponly", message.ErrDenied},
		{"nobody", message.ErrUnknownAgent},
		{"old", message.ErrUnsupported},
	} {
		if _, err := send(t, r, tc.agent, "", "x"); !errors.Is(err, tc.sentinel) {
			t.Errorf("send to %s: %v, want %v", tc.agent, err, tc.sentinel)
		}
	}
	// boss starts on its message, asks echo, and is refused old (not in
	// its sends_to) before it replies.
	if a := r.agent(t, "boss"); a.State != stateIdle {
		t.Fatalf("on-message agent before its first message: %s", a.State)
	}
	mustReply(t, r, "boss", "", "go", "done")
	out, ok := "", false
	inst := r.d.g.Agents.Instance("boss")
	if inst == nil {
		t.Fatal("boss is not running after its message")
	}
	inst.Stop()
	testenv.Eventually(t, 30*time.Second, "boss's output", func() bool { out, ok = r.output("boss"); return ok })
	for _, want := range []string{`"text":"echo: via boss"`, `"end":{"id":"q","tag":"reply"`, `"err":{"code":"denied"`} {
		if !strings.Contains(out, want) {
			t.Errorf("boss's output lacks %s:\n%s", want, out)
		}
	}
}

// TestMessagesPerSession: a per-session agent gets an instance per
// session (messages of one session to the same instance), an idle instance
// is stopped but one with a message in flight is not, max_instances stops
// the longest-idle instance first and refuses when all are working, and an
// instance that traps fails its message and the next message of the
// session starts a new one.
func TestMessagesPerSession(t *testing.T) {
	probe := testenv.Agent(t, "test-agents", "probe")
	cfg := header(t) + fmt.Sprintf(`
[agent.chat]
component = %q
instances = "per-session"
idle_timeout = "400ms"
max_instances = 2
input = '{"steps":[{"op":"serve","mode":"upper"}]}'

[agent.quiet]
component = %q
instances = "per-session"
idle_timeout = "200ms"
max_instances = 2
input = '{"steps":[{"op":"serve","mode":"silent"}]}'

[agent.dies]
component = %q
instances = "per-session"
input = '{"steps":[{"op":"serve","mode":"die"}]}'
`, probe, probe, probe)
	r := serve(t, writeConfig(t, t.TempDir(), cfg))
	r.waitAgent(t, "chat", "running", func(a control.AgentStatus) bool { return a.State == stateRunning })
	mustReply(t, r, "chat", "a", "one", "ONE")
	mustReply(t, r, "chat", "b", "two", "TWO")
	mustReply(t, r, "chat", "a", "three", "THREE")
	sessions := map[string]uint64{}
	for _, in := range r.agent(t, "chat").Instances {
		sessions[in.Session] = in.Messages
	}
	if len(sessions) != 2 || sessions["a"] != 2 || sessions["b"] != 1 {
		t.Fatalf("instances by session %v: want a:2 b:1", sessions)
	}
	r.waitAgent(t, "chat", "its idle instances stopped", func(a control.AgentStatus) bool { return len(a.Instances) == 0 })
	mustReply(t, r, "chat", "a", "back", "BACK")

	// quiet never replies: its instances have work in flight.
	m1, err := send(t, r, "quiet", "x", "hold")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := send(t, r, "quiet", "y", "hold"); err != nil {
		t.Fatal(err)
	}
	if _, err := send(t, r, "quiet", "z", "third"); !errors.Is(err, message.ErrBusy) {
		t.Fatalf("a third session with both instances working: %v, want busy", err)
	}
	// Past several idle timeouts the working instances are still there.
	// (A bounded wait is what is checked: nothing may happen in it.)
	time.Sleep(5 * 200 * time.Millisecond)
	if n := len(r.agent(t, "quiet").Instances); n != 2 {
		t.Fatalf("%d instances of quiet: an instance with work in flight was reaped", n)
	}
	if !m1.Cancel() {
		t.Fatal("cancel")
	}

	m, err := send(t, r, "dies", "s", "partial")
	if err != nil {
		t.Fatal(err)
	}
	v := replyOf(t, m)
	if v.Status != message.StatusFailed || v.Error == nil || v.Error.Code != "unavailable" {
		t.Fatalf("a message whose instance trapped: %+v", v)
	}
	r.waitAgent(t, "dies", "a trap counted", func(a control.AgentStatus) bool { return a.Traps == 1 })
	m2, err := send(t, r, "dies", "s", "again")
	if err != nil {
		t.Fatalf("the next message of the session: %v", err)
	}
	if v := replyOf(t, m2); v.Error == nil || v.Error.Code != "unavailable" {
		t.Fatalf("second message %+v", v)
	}
}

// TestMessagesOnMessage: an on-message agent starts with its first message
// and goes back to idle after its idle_timeout; the next message starts it
// again.
func TestMessagesOnMessage(t *testing.T) {
	cfg := header(t) + fmt.Sprintf(`
[agent.lazy]
component = %q
start = "on-message"
idle_timeout = "300ms"
`, testenv.Agent(t, "agents", "echo"))
	r := serve(t, writeConfig(t, t.TempDir(), cfg))
	r.waitAgent(t, "lazy", "idle", func(a control.AgentStatus) bool { return a.State == stateIdle })
	if a := r.agent(t, "lazy"); len(a.Instances) != 0 {
		t.Fatalf("instances before any message: %+v", a.Instances)
	}
	mustReply(t, r, "lazy", "", "wake up", "echo: wake up")
	r.waitAgent(t, "lazy", "idle again", func(a control.AgentStatus) bool { return a.State == stateIdle })
	mustReply(t, r, "lazy", "", "again", "echo: again")
}

// TestMessageWhileStarting: a message sent while the daemon starts, before
// its agent has a service, waits for the agent to run and is answered (it
// was refused "agent is stopped").
func TestMessageWhileStarting(t *testing.T) {
	r := build(t, writeConfig(t, t.TempDir(), header(t)+fmt.Sprintf("[agent.echo]\ncomponent = %q\n", testenv.Agent(t, "agents", "echo"))))
	type sent struct {
		m   *message.Message
		err error
	}
	done := make(chan sent, 1)
	go func() {
		m, _, err := r.d.Messages().Send(t.Context(), message.Request{Agent: "echo", Sender: message.SenderAPI, Content: "early"})
		done <- sent{m, err}
	}()
	testenv.Eventually(t, 10*time.Second, "the message to wait for its agent (or be refused)", func() bool {
		open, _, _ := r.d.Messages().Stats()
		return open == 1 || len(done) == 1
	})
	r.start(t)
	s := testenv.Recv(t, done, 60*time.Second, "the early message to be delivered")
	if s.err != nil {
		t.Fatalf("a message sent while the daemon starts: %v", s.err)
	}
	if v := replyOf(t, s.m); v.Reply != "echo: early" {
		t.Fatalf("reply %+v", v)
	}
}

// TestMessageToFailedAgent: a message to an agent that failed is refused
// with the reason it failed, as ps shows it (it said only "is failed").
func TestMessageToFailedAgent(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone.wasm")
	r := serve(t, writeConfig(t, t.TempDir(), header(t)+fmt.Sprintf("[agent.broken]\ncomponent = %q\nrestart = \"never\"\n", missing)))
	a := r.waitAgent(t, "broken", "failed", func(a control.AgentStatus) bool { return a.State == stateFailed })
	if a.LastError == "" {
		t.Fatal("a failed agent without its last error")
	}
	_, err := send(t, r, "broken", "", "hi")
	if err == nil || !strings.Contains(err.Error(), `agent "broken" is failed: `+a.LastError) {
		t.Fatalf("a message to the failed agent: %v, want it refused naming why (%s)", err, a.LastError)
	}
}
