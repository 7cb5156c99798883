package contract_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/gateway"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// namedMemTooling is memTooling called name with a connect timeout (30s)
// longer than the tests wait for an envelope: an operation left waiting for
// a session after its tooling was removed would fail them.
func namedMemTooling(t testing.TB, name string, s *testenv.MCPServer) *mcpclient.Client {
	t.Helper()
	return memTooling(t, name, s, zap.NewNop(), 30*time.Second)
}

func TestAddAndRemoveToolingWhileServing(t *testing.T) {
	e := newEnv(t, envOptions{})
	in := inbox.New(16)
	a := contract.NewAgent(e.hub, "a", in, contract.Options{})
	t.Cleanup(a.Close)
	if _, err := a.Get("extra"); codeOf(t, err) != tooling.CodeNotFound {
		t.Fatalf("get before add: %v, want not-found", err)
	}

	srv := newServer(true)
	extra := namedMemTooling(t, "extra", srv)
	if err := e.hub.AddTooling(gateway.Entry{Tooling: extra}); err != nil {
		t.Fatal(err)
	}
	if err := e.hub.AddTooling(gateway.Entry{Tooling: namedMemTooling(t, "extra", srv)}); !errors.Is(err, gateway.ErrToolingExists) {
		t.Fatalf("second add: %v, want ErrToolingExists", err)
	}
	if got := e.hub.Names(); len(got) != 2 || got[0] != "extra" || got[1] != "mem" {
		t.Fatalf("names %v", got)
	}
	testenv.Eventually(t, 10*time.Second, "the added tooling's session", func() bool { return extra.Status().Connected })

	h, err := a.Get("extra")
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.CallToolBlocking(context.Background(), "echo", `{"text":"hi"}`)
	if err != nil {
		t.Fatal(err)
	}
	if txt, _ := resultText(t, res); txt != "hi" {
		t.Fatalf("echo returned %q", txt)
	}
	subID, err := h.SubscribeResource(context.Background(), "test://r0")
	if err != nil {
		t.Fatal(err)
	}
	slowID, err := h.CallTool("slow", `{"tag":"removed"}`)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Recv(t, srv.SlowStarts(), 10*time.Second, "the slow call")

	if err := e.hub.RemoveTooling("extra"); err != nil {
		t.Fatal(err)
	}
	got := map[string]inbox.Envelope{}
	for range 2 {
		env := recv(t, in)
		got[env.ID] = env
	}
	for _, id := range []string{slowID, subID} {
		ev, ok := got[id].Event.(inbox.Error)
		if !ok {
			t.Fatalf("envelope for %s: %+v, want an error", id, got[id])
		}
		if ev.Err.Code != tooling.CodeUnavailable {
			t.Fatalf("envelope for %s: %v, want unavailable", id, ev.Err)
		}
	}
	if extra.Status().Connected {
		t.Fatal("the removed tooling's session is still up")
	}
	if _, err := h.ListTools(context.Background()); codeOf(t, err) != tooling.CodeUnavailable {
		t.Fatalf("list-tools on a removed tooling: %v, want unavailable", err)
	}
	if _, err := h.CallTool("echo", `{}`); codeOf(t, err) != tooling.CodeUnavailable {
		t.Fatalf("call-tool on a removed tooling: %v, want unavailable", err)
	}
	if _, err := h.SubscribeResourceList(); codeOf(t, err) != tooling.CodeUnavailable {
		t.Fatalf("subscribe on a removed tooling: %v, want unavailable", err)
	}
	if _, err := a.Get("extra"); codeOf(t, err) != tooling.CodeNotFound {
		t.Fatalf("get after remove: %v, want not-found", err)
	}
	if err := e.hub.RemoveTooling("extra"); !errors.Is(err, gateway.ErrNoTooling) {
		t.Fatalf("second remove: %v, want ErrNoTooling", err)
	}

	// The sibling was not touched.
	mh, err := a.Get("mem")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mh.CallToolBlocking(context.Background(), "echo", `{"text":"still"}`); err != nil {
		t.Fatal(err)
	}

	// The name can be served again.
	again := namedMemTooling(t, "extra", srv)
	if err := e.hub.AddTooling(gateway.Entry{Tooling: again}); err != nil {
		t.Fatal(err)
	}
	h2, err := a.Get("extra")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h2.CallToolBlocking(context.Background(), "echo", `{"text":"back"}`); err != nil {
		t.Fatal(err)
	}
}

func TestAddToolingBeforeAndAfterServe(t *testing.T) {
	srv := newServer(true)
	hub := gateway.NewHub(nil, zap.NewNop())
	early := namedMemTooling(t, "early", srv)
	if err := hub.AddTooling(gateway.Entry{Tooling: early}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- hub.Serve(ctx) }()
	testenv.Eventually(t, 10*time.Second, "the early tooling's session", func() bool { return early.Status().Connected })
	cancel()
	testenv.Recv(t, done, 10*time.Second, "Serve to return")
	if err := hub.AddTooling(gateway.Entry{Tooling: namedMemTooling(t, "late", srv)}); !errors.Is(err, gateway.ErrHubStopped) {
		t.Fatalf("add after Serve: %v, want ErrHubStopped", err)
	}
}

// TestRemoveToolingFailsQueuedCalls removes a tooling with one call running
// and more queued behind its concurrency limit (async and blocking): every
// one fails with unavailable at once, none waits for a session that will
// never come.
func TestRemoveToolingFailsQueuedCalls(t *testing.T) {
	e := newEnv(t, envOptions{})
	srv := newServer(true)
	extra := namedMemTooling(t, "extra", srv)
	if err := e.hub.AddTooling(gateway.Entry{Tooling: extra, Limits: gateway.Limits{MaxConcurrentCalls: 1}}); err != nil {
		t.Fatal(err)
	}
	in := inbox.New(16)
	a := contract.NewAgent(e.hub, "a", in, contract.Options{})
	t.Cleanup(a.Close)
	h, err := a.Get("extra")
	if err != nil {
		t.Fatal(err)
	}
	running, err := h.CallTool("slow", `{"tag":"running"}`)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Recv(t, srv.SlowStarts(), 10*time.Second, "the running call")
	queued, err := h.CallTool("echo", `{"text":"queued"}`)
	if err != nil {
		t.Fatal(err)
	}
	blocking := make(chan error, 1)
	go func() {
		_, err := h.CallToolBlocking(context.Background(), "echo", `{"text":"blocking"}`)
		blocking <- err
	}()
	testenv.Eventually(t, 10*time.Second, "the blocking call queued", func() bool {
		for _, st := range e.hub.Stats() {
			if st.Tooling == "extra" {
				return st.Queued == 2
			}
		}
		return false
	})
	if err := e.hub.RemoveTooling("extra"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		env := recv(t, in)
		ev, ok := env.Event.(inbox.Error)
		if (env.ID != running && env.ID != queued) || !ok || ev.Err.Code != tooling.CodeUnavailable {
			t.Errorf("envelope %+v, want unavailable for %s or %s", env, running, queued)
		}
	}
	if err := testenv.Recv(t, blocking, 10*time.Second, "the blocking call"); codeOf(t, err) != tooling.CodeUnavailable {
		t.Errorf("the queued blocking call: %v, want unavailable", err)
	}
}
