package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestDurableMessageSurvivesKill: a message accepted by a durable agent
// (the paced test agent: it tells "delivered" of its tooling the content,
// then streams it word by word, calling "pause" after each) is answered
// after its host was killed (SIGKILL) mid-reply and started again: the
// restarted host has the message under its id and under its idempotency
// key, its reply is the whole content, and the agent was given the
// message once ("delivered" called once: the replay answered it from the
// oplog). "pause" is read-only by its annotations, so the one out at the
// kill is made again.
func TestDurableMessageSurvivesKill(t *testing.T) {
	for _, tc := range []struct {
		name, instances, session string
		stop                     syscall.Signal
		traced                   bool
	}{
		{"single", "single", "", syscall.SIGKILL, false},
		{"per-session", "per-session", "s1", syscall.SIGKILL, false}, // resumed at the host's start, with no message to its session
		// A deploy: the host shuts down (the durable instance is suspended,
		// its message left open in its oplog), and its next start answers.
		{"shutdown", "single", "", syscall.SIGTERM, false},
		{"per-session shutdown", "per-session", "s1", syscall.SIGTERM, false},
		// A per-session agent's one-off message (no session): its
		// instance's oplog is named by the message's id.
		{"one-off", "per-session", "", syscall.SIGKILL, false},
		{"one-off shutdown", "per-session", "", syscall.SIGTERM, false},
		// The message's trace goes on across the kill: the resumed
		// message's span is in the caller's trace, its replayed calls are
		// events of it, not spans.
		{"traced", "single", "", syscall.SIGKILL, true},
		// A reload that changes the agent hands its instance's message
		// over to the next instance, in the same process.
		{"reload", "single", "", syscall.SIGHUP, false},
		// So does an operator's restart (toolhostd restart).
		{"restart", "single", "", operatorRestart, false},
	} {
		t.Run(tc.name, func(t *testing.T) { durableMessage(t, tc.instances, tc.session, tc.stop, tc.traced) })
	}
}

// operatorRestart is not a signal: durableMessage restarts the agent
// through the control API (toolhostd restart) instead of stopping the
// host.
const operatorRestart = syscall.Signal(-1)

// durableMessage is one run of TestDurableMessageSurvivesKill: the first
// host is stopped with stop mid-reply.
func durableMessage(t *testing.T, instances, session string, stop syscall.Signal, traced bool) {
	const content = "one two three four five six "
	const holdAt = 3 // the pause held at the kill
	ps, psURL := newHoldPace(t, holdAt)

	dir := t.TempDir()
	sock := filepath.Join(dir, "ctl.sock")
	var rcv *testenv.OTLPReceiver
	traces := ""
	if traced {
		rcv = testenv.NewOTLPReceiver(t)
		traces = fmt.Sprintf("traces = { endpoint = %q }\n", rcv.URL)
	}
	config := func(grace string) string {
		return writeConfigFile(t, dir, "toolhostd.toml", fmt.Sprintf(`version = 1
[host]
state_dir = %q
control_socket = %q
`+traces+"\n", filepath.Join(dir, "state"), sock)+
			pacedTables(t, psURL, fmt.Sprintf("stop_grace = %q\ninstances = %q\n", grace, instances)))
	}
	cfg := config("2s")
	dial := func(p *serveProc) *control.Client {
		var c *control.Client
		waitFor(t, 60*time.Second, func() bool {
			var err error
			if c, err = control.Dial(sock); err != nil {
				return false
			}
			if a, err := c.Agent(t.Context(), "paced"); err != nil || a.State != "running" {
				c.Close()
				return false
			}
			return true
		}, p.out)
		return c
	}

	first := startServe(t, cfg)
	c1 := dial(first)
	type sendResult struct {
		st  control.MessageStatus
		err error
	}
	sent := make(chan sendResult, 1)
	caller := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x0d, 0x0b, 0x1e, 0x5a, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled, Remote: true,
	})
	go func() {
		ctx := trace.ContextWithRemoteSpanContext(context.Background(), caller)
		st, err := c1.Send(ctx, "paced", content, control.SendOptions{IdempotencyKey: "k1", Session: session})
		sent <- sendResult{st, err}
	}()
	testenv.Recv(t, ps.held, 60*time.Second, "the reply's third pause")
	if stop == syscall.SIGHUP || stop == operatorRestart {
		// A reload that changes the agent, or an operator's restart: its
		// instance is handed over to the next, with the message, in the
		// same process; the sender's wait ends with the whole reply.
		if stop == operatorRestart {
			if _, err := c1.RestartAgent(t.Context(), "paced"); err != nil {
				t.Fatal(err)
			}
		} else {
			config("3s")
			if err := first.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
		}
		r := testenv.Recv(t, sent, 60*time.Second, "the send's answer")
		st, err := r.st, r.err
		for err == nil && (st.Status == message.StatusQueued || st.Status == message.StatusWorking) {
			st, err = c1.WaitMessage(t.Context(), "paced", st.ID, 30*time.Second)
		}
		if err != nil || st.Status != message.StatusDone || st.Reply != content {
			t.Fatalf("after the hand-over: %+v %v, want done with the whole content\n%s", st, err, first.out.String())
		}
		c1.Close()
		ps.check(t, content, "hand-over")
		return
	}
	if err := first.cmd.Process.Signal(stop); err != nil {
		t.Fatal(err)
	}
	_ = first.wait(t, 40*time.Second)
	ps.releaseHeld()
	// The first host ends without the reply: the send fails (a kill), or
	// answers with the message still working (a shutdown's last answer).
	if r := testenv.Recv(t, sent, 30*time.Second, "the first send to end with its host"); r.err == nil && r.st.Status != message.StatusWorking {
		t.Fatalf("the send to the stopped host: %+v, want an error or the message working", r.st)
	}
	c1.Close()

	second := startServe(t, cfg)
	c2 := dial(second)
	defer c2.Close()
	// The host resumes the message by itself; then a retry with the key
	// finds it.
	testenv.Eventually(t, 60*time.Second, "the message to be resumed", func() bool {
		return strings.Contains(second.out.String(), "message resumed")
	})
	st, err := c2.Send(t.Context(), "paced", content, control.SendOptions{IdempotencyKey: "k1", Session: session})
	if err != nil {
		t.Fatalf("retry: %v\n%s", err, second.out.String())
	}
	st, err = c2.WaitMessage(t.Context(), "paced", st.ID, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != message.StatusDone || st.Reply != content {
		t.Fatalf("after the restart, message %s: %s %q %+v, want done with the whole content\n%s", st.ID, st.Status, st.Reply, st.Error, second.out.String())
	}
	if got, err := c2.Message(t.Context(), "paced", st.ID); err != nil || got.Reply != content {
		t.Errorf("GET of message %s: %+v %v", st.ID, got, err)
	}
	if traced {
		durableTrace(t, rcv, caller.TraceID().String(), st.TraceID)
	}
	ps.check(t, content, "kill")
}

// holdPace is the MCP server "pace" of the durable message tests'
// paced agent: it counts the agent's "delivered" calls (one per message
// given to an instance) and its "pause" calls, read-only by their
// annotations, and holds the holdAt-th pause until releaseHeld (held is
// closed then), answering it with an error.
type holdPace struct {
	mu        sync.Mutex
	delivered int
	pauses    int
	held      chan struct{}
	release   chan struct{}
	once      sync.Once
}

func newHoldPace(t *testing.T, holdAt int) (*holdPace, string) {
	ps := &holdPace{held: make(chan struct{}), release: make(chan struct{})}
	srv := mcp.NewServer(&mcp.Implementation{Name: "pace", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "delivered"}, func(_ context.Context, _ *mcp.CallToolRequest, in paceIn) (*mcp.CallToolResult, any, error) {
		ps.mu.Lock()
		ps.delivered++
		ps.mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "pause", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ paceIn) (*mcp.CallToolResult, any, error) {
			ps.mu.Lock()
			ps.pauses++
			hold := ps.pauses == holdAt
			ps.mu.Unlock()
			if hold {
				close(ps.held)
				select {
				case <-ps.release:
				case <-ctx.Done():
				}
				return nil, nil, errors.New("released")
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	t.Cleanup(func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	t.Cleanup(ps.releaseHeld)
	return ps, hs.URL
}

func (ps *holdPace) releaseHeld() { ps.once.Do(func() { close(ps.release) }) }

// check: the agent was given the message once (the replay answered
// "delivered" from the oplog), and made one pause per word of content
// plus the one out at the stop (what), made again.
func (ps *holdPace) check(t *testing.T, content, what string) {
	t.Helper()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.delivered != 1 {
		t.Errorf("the agent was given the message %d times, want once", ps.delivered)
	}
	if want := len(strings.Fields(content)) + 1; ps.pauses != want {
		t.Errorf("%d pauses, want %d (one per word, the one out at the %s twice)", ps.pauses, want, what)
	}
}

// durableTrace checks the trace of a message resumed after its host's
// kill: the resumed message's invoke_agent span is in the caller's trace
// (tid), says so, and has the replayed calls as events; the calls made
// live after the replay are its children; "delivered", answered from the
// oplog, has no span of the second host.
func durableTrace(t *testing.T, rcv *testenv.OTLPReceiver, tid, got string) {
	t.Helper()
	if got != tid {
		t.Errorf("the resumed message's trace %s, want the caller's %s", got, tid)
	}
	var resumed *tracepb.Span
	testenv.Eventually(t, 30*time.Second, "the resumed message's span", func() bool {
		for _, sp := range rcv.Spans(tid) {
			if sp.Name == "invoke_agent paced" && testenv.AttrStrings(sp.Attributes)["toolhost.message.resumed"] == "true" {
				resumed = sp
				return true
			}
		}
		return false
	})
	replayed := map[string]int{}
	for _, ev := range resumed.Events {
		if ev.Name == "toolhost.replayed" {
			replayed[testenv.AttrStrings(ev.Attributes)["toolhost.call"]]++
		}
	}
	if replayed["toolhost:agent/tooling@0.3.0#[method]tooling.call-tool-blocking"] == 0 || replayed["toolhost:agent/inbox@0.3.0#recv"] == 0 {
		t.Errorf("the resumed span's replayed events %v: want its recv and tool calls", replayed)
	}
	var live int
	for _, sp := range rcv.Spans(tid) {
		if sp.Name == "execute_tool pause" && string(sp.ParentSpanId) == string(resumed.SpanId) {
			live++
		}
	}
	if live == 0 {
		t.Error("no execute_tool span under the resumed message: the calls after the replay are not in its trace")
	}
}
