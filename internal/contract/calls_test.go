package contract_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/gateway"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

func TestGet(t *testing.T) {
	e := newEnv(t, envOptions{})
	in := inbox.New(8)
	a := contract.NewAgent(e.hub, "granted-nothing", in, contract.Options{Grants: func(name string) bool { return name == "other" }})
	defer a.Close()
	if _, err := a.Get("nope"); codeOf(t, err) != tooling.CodeNotFound {
		t.Fatalf("Get(nope): %v, want not-found", err)
	}
	if _, err := a.Get("mem"); codeOf(t, err) != tooling.CodeDenied {
		t.Fatalf("Get(mem) without the grant: %v, want denied", err)
	}
	b := contract.NewAgent(e.hub, "granted", inbox.New(8), contract.Options{Grants: func(name string) bool { return name == "mem" }})
	h1, err := b.Get("mem")
	if err != nil {
		t.Fatal(err)
	}
	h2, err := b.Get("mem")
	if err != nil {
		t.Fatal(err)
	}
	if h1 == h2 {
		t.Fatal("Get returned the same handle twice")
	}
	if h1.Kind() != "mcp" || h1.Name() != "mem" {
		t.Fatalf("kind %q name %q", h1.Kind(), h1.Name())
	}
	tools, err := h1.ListTools(context.Background())
	if err != nil || len(tools) != 3 {
		t.Fatalf("ListTools: %d tools, %v", len(tools), err)
	}
	b.Close()
	if _, err := b.Get("mem"); codeOf(t, err) != tooling.CodeCancelled {
		t.Fatalf("Get after Close: %v", err)
	}
	if _, err := h1.CallTool("echo", `{}`); codeOf(t, err) != tooling.CodeCancelled {
		t.Fatalf("CallTool after Close: %v", err)
	}
}

func TestCallToolResult(t *testing.T) {
	e := newEnv(t, envOptions{})
	_, h, in := e.agent(t, "a", 8)
	args := `{"text":"hello"}`
	id, err := h.CallTool("echo", args)
	if err != nil {
		t.Fatal(err)
	}
	if len(id) != 36 {
		t.Fatalf("id %q is not a UUID", id)
	}
	env := recv(t, in)
	if env.ID != id {
		t.Fatalf("envelope id %q, want %q", env.ID, id)
	}
	tr, ok := env.Event.(inbox.ToolResult)
	if !ok {
		t.Fatalf("event %T %+v, want a tool-result", env.Event, env.Event)
	}
	if tr.Result.Name != "echo" || tr.Result.Arguments != args {
		t.Fatalf("tool-result name %q arguments %q", tr.Result.Name, tr.Result.Arguments)
	}
	if text, isErr := resultText(t, tr.Result); text != "hello" || isErr {
		t.Fatalf("value text %q isError %v", text, isErr)
	}
	if h.IsOpen(id) {
		t.Fatal("IsOpen after the result was enqueued")
	}
	if h.IsOpen("00000000-0000-0000-0000-000000000001") {
		t.Fatal("IsOpen of an unknown id")
	}
	quiet(t, in, 50*time.Millisecond) // exactly one envelope
}

func TestToolErrorIsAResult(t *testing.T) {
	e := newEnv(t, envOptions{})
	_, h, in := e.agent(t, "a", 8)
	id, err := h.CallTool("fail", `{"text":"x"}`)
	if err != nil {
		t.Fatal(err)
	}
	env := recv(t, in)
	tr, ok := env.Event.(inbox.ToolResult)
	if env.ID != id || !ok {
		t.Fatalf("got %+v, want the tool-result of %s", env, id)
	}
	if text, isErr := resultText(t, tr.Result); !isErr || text != "failed: x" {
		t.Fatalf("value text %q isError %v", text, isErr)
	}
	// Blocking: in-band, not an error either.
	res, err := h.CallToolBlocking(context.Background(), "fail", `{"text":"y"}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, isErr := resultText(t, res); !isErr {
		t.Fatal("isError lost")
	}
}

func TestUnknownToolIsAnErrorEnvelope(t *testing.T) {
	e := newEnv(t, envOptions{})
	_, h, in := e.agent(t, "a", 8)
	id, err := h.CallTool("no-such-tool", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	env := recv(t, in)
	switch ev := env.Event.(type) {
	case inbox.Error:
		if env.ID != id {
			t.Fatalf("id %q", env.ID)
		}
	case inbox.ToolResult:
		// go-sdk may report an unknown tool as an isError result.
		if _, isErr := resultText(t, ev.Result); !isErr {
			t.Fatal("unknown tool gave a successful result")
		}
	default:
		t.Fatalf("event %T", env.Event)
	}
}

func TestInvalidArguments(t *testing.T) {
	e := newEnv(t, envOptions{})
	_, h, in := e.agent(t, "a", 8)
	for _, args := range []string{"", " ", "[]", "1", "null", `"x"`, "{", `{"a":1}x`, `{"a":}`} {
		t.Run(fmt.Sprintf("%q", args), func(t *testing.T) {
			if _, err := h.CallTool("echo", args); codeOf(t, err) != tooling.CodeInvalidArgument {
				t.Fatalf("CallTool: %v, want invalid-argument", err)
			}
			if _, err := h.CallToolBlocking(context.Background(), "echo", args); codeOf(t, err) != tooling.CodeInvalidArgument {
				t.Fatalf("CallToolBlocking: %v, want invalid-argument", err)
			}
		})
	}
	if _, err := h.CallTool("echo", " \n{\"text\":\"ok\"} "); err != nil {
		t.Fatalf("an object with whitespace around: %v", err)
	}
	recv(t, in)
	quiet(t, in, 50*time.Millisecond)
	if in.Pending() != 0 {
		t.Fatal("refused calls left envelopes")
	}
}

func TestIsOpenAndCancelOpenCall(t *testing.T) {
	e := newEnv(t, envOptions{})
	_, h, in := e.agent(t, "a", 8)
	id, err := h.CallTool("slow", `{"tag":"c1"}`)
	if err != nil {
		t.Fatal(err)
	}
	if !h.IsOpen(id) {
		t.Fatal("IsOpen right after CallTool = false")
	}
	testenv.Recv(t, e.srv.SlowStarts(), 10*time.Second, "the slow tool to start")
	if !h.IsOpen(id) {
		t.Fatal("IsOpen while running = false")
	}
	if !h.Cancel(id) {
		t.Fatal("Cancel of an open call = false")
	}
	// The in-flight request was cancelled on the server
	// (notifications/cancelled).
	if tag := testenv.Recv(t, e.srv.SlowCancels(), 10*time.Second, "the server to see the cancellation"); tag != "c1" {
		t.Fatalf("cancelled %q", tag)
	}
	if h.IsOpen(id) {
		t.Fatal("IsOpen after Cancel")
	}
	if h.Cancel(id) {
		t.Fatal("second Cancel = true")
	}
	quiet(t, in, 200*time.Millisecond)
}

func TestCancelCases(t *testing.T) {
	e := newEnv(t, envOptions{limits: gateway.Limits{MaxConcurrentCalls: 1}})
	_, h, in := e.agent(t, "a", 8)

	// Undelivered: the result is in the inbox, not yet received.
	id, _ := h.CallTool("echo", `{"text":"u"}`)
	testenv.Eventually(t, 10*time.Second, "the result to be enqueued", func() bool { return in.Pending() == 1 })
	if h.IsOpen(id) {
		t.Fatal("IsOpen with the envelope enqueued")
	}
	if !h.Cancel(id) {
		t.Fatal("Cancel of an undelivered result = false")
	}
	if in.Pending() != 0 {
		t.Fatal("the undelivered envelope stayed")
	}
	if h.Cancel(id) {
		t.Fatal("Cancel of an already-cancelled id = true")
	}

	// Received: false.
	id, _ = h.CallTool("echo", `{"text":"r"}`)
	if env := recv(t, in); env.ID != id {
		t.Fatalf("got %q", env.ID)
	}
	if h.Cancel(id) {
		t.Fatal("Cancel of a received call = true")
	}

	// Unknown: false.
	if h.Cancel("6f1c2c1e-0000-4000-8000-000000000000") {
		t.Fatal("Cancel of an unknown id = true")
	}

	// Queued behind a running call (one worker): cancelled before it runs.
	running, _ := h.CallTool("slow", `{"tag":"running"}`)
	testenv.Recv(t, e.srv.SlowStarts(), 10*time.Second, "the slow tool")
	queued, _ := h.CallTool("slow", `{"tag":"queued"}`)
	if !h.IsOpen(queued) {
		t.Fatal("a queued call is not open")
	}
	if !h.Cancel(queued) {
		t.Fatal("Cancel of a queued call = false")
	}
	e.srv.ReleaseSlow()
	env := recv(t, in)
	if env.ID != running {
		t.Fatalf("got %q, want the running call %q", env.ID, running)
	}
	quiet(t, in, 200*time.Millisecond)
	select {
	case tag := <-e.srv.SlowStarts():
		t.Fatalf("the cancelled queued call ran (%s)", tag)
	default:
	}
}

func TestTimeout(t *testing.T) {
	e := newEnv(t, envOptions{limits: gateway.Limits{CallTimeout: 150 * time.Millisecond}})
	_, h, in := e.agent(t, "a", 8)
	id, err := h.CallTool("slow", `{"tag":"t1"}`)
	if err != nil {
		t.Fatal(err)
	}
	env := recv(t, in)
	ev, ok := env.Event.(inbox.Error)
	if env.ID != id || !ok || ev.Err.Code != tooling.CodeTimeout {
		t.Fatalf("got %+v, want a timeout error for %s", env, id)
	}
	testenv.Recv(t, e.srv.SlowCancels(), 10*time.Second, "the server to see the timed-out call cancelled")
	if _, err := h.CallToolBlocking(context.Background(), "slow", `{"tag":"t2"}`); codeOf(t, err) != tooling.CodeTimeout {
		t.Fatalf("blocking: %v, want timeout", err)
	}
	quiet(t, in, 50*time.Millisecond)
}

func TestQueuedCallTimesOut(t *testing.T) {
	e := newEnv(t, envOptions{limits: gateway.Limits{MaxConcurrentCalls: 1, CallTimeout: 300 * time.Millisecond}})
	_, h, in := e.agent(t, "a", 8)
	first, _ := h.CallTool("slow", `{"tag":"first"}`)
	testenv.Recv(t, e.srv.SlowStarts(), 10*time.Second, "the slow tool")
	second, _ := h.CallTool("slow", `{"tag":"second"}`)
	got := map[string]tooling.ErrorCode{}
	for range 2 {
		env := recv(t, in)
		ev, ok := env.Event.(inbox.Error)
		if !ok {
			t.Fatalf("event %T", env.Event)
		}
		got[env.ID] = ev.Err.Code
	}
	if got[first] != tooling.CodeTimeout || got[second] != tooling.CodeTimeout {
		t.Fatalf("codes %v, want timeout for both", got)
	}
}

func TestBusy(t *testing.T) {
	e := newEnv(t, envOptions{})
	_, h, in := e.agent(t, "a", 2)
	a, _ := h.CallTool("slow", `{"tag":"1"}`)
	if _, err := h.CallTool("slow", `{"tag":"2"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CallTool("echo", `{"text":"x"}`); codeOf(t, err) != tooling.CodeBusy {
		t.Fatalf("third call: %v, want busy", err)
	}
	h.Cancel(a)
	if _, err := h.CallTool("echo", `{"text":"x"}`); err != nil {
		t.Fatalf("after a cancel: %v", err)
	}
	// The echo result now sits undelivered with one call open: still full.
	testenv.Eventually(t, 10*time.Second, "the echo result", func() bool { return in.Pending() == 1 })
	if _, err := h.CallTool("echo", `{"text":"y"}`); codeOf(t, err) != tooling.CodeBusy {
		t.Fatalf("with one open and one undelivered: %v, want busy", err)
	}
	recv(t, in)
	if _, err := h.CallTool("echo", `{"text":"z"}`); err != nil {
		t.Fatalf("after a recv: %v", err)
	}
}

func TestCallToolBlocking(t *testing.T) {
	e := newEnv(t, envOptions{})
	_, h, in := e.agent(t, "a", 8)
	res, err := h.CallToolBlocking(context.Background(), "echo", `{"text":"in-band"}`)
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := resultText(t, res); text != "in-band" || res.Name != "echo" || res.Arguments != `{"text":"in-band"}` {
		t.Fatalf("result %+v", res)
	}
	quiet(t, in, 50*time.Millisecond)

	tests := []struct {
		name string
		stop func(cancel context.CancelFunc, a *contract.Agent, in *inbox.Inbox)
	}{
		{"ctx ends", func(cancel context.CancelFunc, _ *contract.Agent, _ *inbox.Inbox) { cancel() }},
		{"inbox shutdown", func(_ context.CancelFunc, _ *contract.Agent, in *inbox.Inbox) { in.Shutdown() }},
		{"agent close", func(_ context.CancelFunc, a *contract.Agent, _ *inbox.Inbox) { a.Close() }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, h, in := e.agent(t, tt.name, 8)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			tag := fmt.Sprint("b", i)
			errc := make(chan error, 1)
			go func() {
				_, err := h.CallToolBlocking(ctx, "slow", fmt.Sprintf(`{"tag":%q}`, tag))
				errc <- err
			}()
			if got := testenv.Recv(t, e.srv.SlowStarts(), 10*time.Second, "the slow tool"); got != tag {
				t.Fatalf("started %q", got)
			}
			tt.stop(cancel, a, in)
			if err := testenv.Recv(t, errc, 10*time.Second, "CallToolBlocking to return"); codeOf(t, err) != tooling.CodeCancelled {
				t.Fatalf("%v, want cancelled", err)
			}
			if got := testenv.Recv(t, e.srv.SlowCancels(), 10*time.Second, "the server to see the cancellation"); got != tag {
				t.Fatalf("cancelled %q", got)
			}
			if _, err := h.CallToolBlocking(context.Background(), "echo", `{}`); tt.name != "ctx ends" && codeOf(t, err) != tooling.CodeCancelled {
				t.Fatalf("a call after the stop: %v, want cancelled", err)
			}
		})
	}
}

func TestHandleDropCancelsCalls(t *testing.T) {
	e := newEnv(t, envOptions{})
	a, h1, in := e.agent(t, "a", 8)
	h2, err := a.Get("mem")
	if err != nil {
		t.Fatal(err)
	}
	doomed, _ := h1.CallTool("slow", `{"tag":"doomed"}`)
	testenv.Recv(t, e.srv.SlowStarts(), 10*time.Second, "the slow tool")
	h1.Close()
	if got := testenv.Recv(t, e.srv.SlowCancels(), 10*time.Second, "the cancellation"); got != "doomed" {
		t.Fatalf("cancelled %q", got)
	}
	if h1.IsOpen(doomed) || h2.IsOpen(doomed) {
		t.Fatal("a dropped handle's call is still open")
	}
	// The other handle still works.
	id, err := h2.CallTool("echo", `{"text":"alive"}`)
	if err != nil {
		t.Fatal(err)
	}
	if env := recv(t, in); env.ID != id {
		t.Fatalf("got %q, want %q", env.ID, id)
	}
	if _, err := h1.CallTool("echo", `{}`); codeOf(t, err) != tooling.CodeCancelled {
		t.Fatalf("CallTool on a dropped handle: %v", err)
	}
	quiet(t, in, 100*time.Millisecond)
}

func TestAgentCloseCancelsCalls(t *testing.T) {
	e := newEnv(t, envOptions{})
	a, h, in := e.agent(t, "a", 8)
	for i := range 3 {
		if _, err := h.CallTool("slow", fmt.Sprintf(`{"tag":"x%d"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		testenv.Recv(t, e.srv.SlowStarts(), 10*time.Second, "the slow tools")
	}
	a.Close()
	for range 3 {
		testenv.Recv(t, e.srv.SlowCancels(), 10*time.Second, "the cancellations")
	}
	quiet(t, in, 100*time.Millisecond)
}

// TestManyAgents makes 10,000 async calls from 100 agents, each with its
// own inbox, and checks every result arrives exactly once with its own
// payload.
func TestManyAgents(t *testing.T) {
	agents, perAgent := 100, 100
	if testing.Short() {
		agents, perAgent = 20, 50
	}
	e := newEnv(t, envOptions{})
	var wg sync.WaitGroup
	errs := make(chan error, agents)
	for ai := range agents {
		_, h, in := e.agent(t, fmt.Sprint("agent-", ai), 16)
		wg.Go(func() {
			want := make(map[string]string, perAgent) // id -> text
			got := make(map[string]bool, perAgent)
			recvOne := func() error {
				env, ok := in.Recv(context.Background(), dur(30*time.Second))
				if !ok {
					return fmt.Errorf("agent %d: no envelope within 30s (%d of %d)", ai, len(got), perAgent)
				}
				text, known := want[env.ID]
				switch {
				case !known:
					return fmt.Errorf("agent %d: envelope for unknown id %s", ai, env.ID)
				case got[env.ID]:
					return fmt.Errorf("agent %d: %s delivered twice", ai, env.ID)
				}
				got[env.ID] = true
				tr, ok := env.Event.(inbox.ToolResult)
				if !ok {
					return fmt.Errorf("agent %d: event %T %+v", ai, env.Event, env.Event)
				}
				if tr.Result.Arguments != fmt.Sprintf(`{"text":%q}`, text) || !containsText(tr.Result.Value, text) {
					return fmt.Errorf("agent %d: %s carries %q, want %q", ai, env.ID, tr.Result.Value, text)
				}
				return nil
			}
			for i := 0; i < perAgent; {
				text := fmt.Sprintf("a%d-c%d", ai, i)
				id, err := h.CallTool("echo", fmt.Sprintf(`{"text":%q}`, text))
				if err != nil {
					if tooling.CodeOf(err) == tooling.CodeBusy {
						if err := recvOne(); err != nil {
							errs <- err
							return
						}
						continue
					}
					errs <- err
					return
				}
				want[id] = text
				i++
			}
			for len(got) < perAgent {
				if err := recvOne(); err != nil {
					errs <- err
					return
				}
			}
			if env, ok := in.TryRecv(); ok {
				errs <- fmt.Errorf("agent %d: extra envelope %+v", ai, env)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func containsText(value, text string) bool {
	return strings.Contains(value, `"text":"`+text+`"`)
}

func TestMaxConcurrentCalls(t *testing.T) {
	e := newEnv(t, envOptions{limits: gateway.Limits{MaxConcurrentCalls: 2}})
	_, h, in := e.agent(t, "a", 16)
	var ids []string
	for i := range 5 {
		id, err := h.CallTool("slow", fmt.Sprintf(`{"tag":"s%d"}`, i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := h.CallToolBlocking(context.Background(), "slow", `{"tag":"blocking"}`)
		errc <- err
	}()
	testenv.Recv(t, e.srv.SlowStarts(), 10*time.Second, "a first call")
	testenv.Recv(t, e.srv.SlowStarts(), 10*time.Second, "a second call")
	select {
	case tag := <-e.srv.SlowStarts():
		t.Fatalf("a third call (%s) ran with max_concurrent_calls 2", tag)
	case <-time.After(200 * time.Millisecond):
	}
	for _, id := range ids {
		if !h.IsOpen(id) {
			t.Fatalf("%s is not open", id)
		}
	}
	e.srv.ReleaseSlow()
	if err := testenv.Recv(t, errc, 10*time.Second, "the blocking call"); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for range ids {
		got[recv(t, in).ID] = true
	}
	for _, id := range ids {
		if !got[id] {
			t.Fatalf("no result for %s", id)
		}
	}
	if m := e.srv.SlowMax(); m != 2 {
		t.Fatalf("at most %d calls ran at once, want 2", m)
	}
}

// TestSiblingsUnaffected serves a working tooling beside one whose server
// can never be reached: the broken one fails its calls with unavailable,
// the working one is not held up.
func TestSiblingsUnaffected(t *testing.T) {
	srv := newServer(true)
	mem := memTooling(t, "mem", srv, zap.NewNop(), 5*time.Second)
	broken, err := mcpclient.New(&config.Tooling{
		Name:           "broken",
		Kind:           "mcp",
		Transport:      "stdio",
		Restart:        config.Restart{InitialBackoff: cfgDur(10 * time.Millisecond), MaxBackoff: cfgDur(50 * time.Millisecond), HealthyAfter: cfgDur(time.Second)},
		ToolingProcess: config.ToolingProcess{Command: "unused"},
		ToolingCalls:   config.ToolingCalls{ConnectTimeout: cfgDur(300 * time.Millisecond), CallTimeout: cfgDur(time.Second)},
	}, zap.NewNop(), mcpclient.Options{Dialer: func(context.Context) (mcp.Transport, error) {
		return nil, errors.New("connection refused")
	}})
	if err != nil {
		t.Fatal(err)
	}
	hub := gateway.NewHub([]gateway.Entry{{Tooling: mem}, {Tooling: broken}}, zap.NewNop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- hub.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	if got := hub.Names(); len(got) != 2 || got[0] != "broken" || got[1] != "mem" {
		t.Fatalf("names %v", got)
	}
	a := contract.NewAgent(hub, "a", inbox.New(8), contract.Options{})
	defer a.Close()
	hb, err := a.Get("broken")
	if err != nil {
		t.Fatal(err)
	}
	hm, err := a.Get("mem")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := hb.CallToolBlocking(context.Background(), "anything", `{}`)
		errc <- err
	}()
	for i := range 20 {
		if _, err := hm.CallToolBlocking(context.Background(), "echo", fmt.Sprintf(`{"text":"%d"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := testenv.Recv(t, errc, 10*time.Second, "the broken tooling's call"); codeOf(t, err) != tooling.CodeUnavailable {
		t.Fatalf("broken: %v, want unavailable", err)
	}
}

// TestCallToolBlockingAfter: the call is issued only once ready returned
// nil (ready runs before the tooling sees it); a failing ready fails the
// call with internal and the tooling never sees it.
func TestCallToolBlockingAfter(t *testing.T) {
	tests := []struct {
		name     string
		readyErr error
		fails    bool  // with internal
		calls    int64 // the tools/call the tooling sees
	}{
		{"ready", nil, false, 1},
		{"ready fails", errors.New("the disk is gone"), true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			_, h, _ := e.agent(t, "a", 8)
			before := e.ct.calls.Load()
			var seenBefore int64 = -1
			ready := func() error {
				seenBefore = e.ct.calls.Load() - before
				return tt.readyErr
			}
			res, err := h.CallToolBlockingAfter(context.Background(), "echo", `{"text":"hi"}`, ready)
			if seenBefore != 0 {
				t.Errorf("ready saw %d calls made before it, want 0 (called: %v)", seenBefore, seenBefore >= 0)
			}
			if !tt.fails {
				if err != nil {
					t.Fatal(err)
				}
				if text, _ := resultText(t, res); text != "hi" {
					t.Errorf("result %q, want hi", text)
				}
			} else if got := codeOf(t, err); got != tooling.CodeInternal {
				t.Errorf("code %v (%v), want internal", got, err)
			}
			if n := e.ct.calls.Load() - before; n != tt.calls {
				t.Errorf("the tooling saw %d calls, want %d", n, tt.calls)
			}
		})
	}
}
