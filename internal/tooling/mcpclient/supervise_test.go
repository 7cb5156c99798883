package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// sessionTracker is an in-memory dialer (a net.Pipe per attempt) that can
// cut every connection abruptly: the server going away.
type sessionTracker struct {
	srv   *mcp.Server
	mu    sync.Mutex
	pipes []net.Conn
}

func (st *sessionTracker) dial(ctx context.Context) (mcp.Transport, error) {
	c1, c2 := net.Pipe()
	if _, err := st.srv.Connect(ctx, &mcp.IOTransport{Reader: c2, Writer: c2}, nil); err != nil {
		return nil, err
	}
	st.mu.Lock()
	st.pipes = append(st.pipes, c2)
	st.mu.Unlock()
	return &mcp.IOTransport{Reader: c1, Writer: c1}, nil
}

func (st *sessionTracker) dropAll() {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, c := range st.pipes {
		_ = c.Close()
	}
	st.pipes = nil
}

func TestResubscribeAfterReconnect(t *testing.T) {
	var refuse atomic.Bool
	var subscribed sync.Map
	srv := mcp.NewServer(&mcp.Implementation{Name: "resub", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			if refuse.Load() && req.Params.URI == "test://refused" {
				return errors.New("no longer allowed")
			}
			subscribed.Store(req.Params.URI, true)
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	for _, uri := range []string{"test://kept", "test://refused"} {
		srv.AddResource(&mcp.Resource{URI: uri, Name: uri},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "x"}}}, nil
			})
	}
	tr := &sessionTracker{srv: srv}
	m := newMCP(t, testConfig("resub"), nil, mcpclient.Options{Dialer: tr.dial})
	rec := newRecorder()
	testenv.ServeTooling(t, m, rec)
	waitConnected(t, m)
	ctx := t.Context()
	for _, uri := range []string{"test://kept", "test://refused", "test://dropped"} {
		if err := m.Subscribe(ctx, uri); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Unsubscribe(ctx, "test://dropped"); err != nil {
		t.Fatal(err)
	}
	subscribed.Clear()
	refuse.Store(true)

	tr.dropAll()
	if got := testenv.Recv(t, rec.resubFailed, 10*time.Second, "ResubscribeFailed"); got != "test://refused" {
		t.Errorf("ResubscribeFailed(%q)", got)
	}
	waitConnected(t, m)
	if _, ok := subscribed.Load("test://kept"); !ok {
		t.Error("test://kept was not re-subscribed")
	}
	if _, ok := subscribed.Load("test://dropped"); ok {
		t.Error("an unsubscribed uri was re-subscribed")
	}
	if err := srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://kept"}); err != nil {
		t.Fatal(err)
	}
	if got := testenv.Recv(t, rec.updated, 10*time.Second, "an update after re-subscription"); got != "test://kept" {
		t.Errorf("updated %q", got)
	}
	select {
	case uri := <-rec.resubFailed:
		t.Errorf("second ResubscribeFailed(%q)", uri)
	default:
	}
}

func TestSessionDropFailsInFlightAndWaitsForNext(t *testing.T) {
	ts := newTestServer(0)
	tr := &sessionTracker{srv: ts.Server}
	m := newMCP(t, testConfig("drop"), nil, mcpclient.Options{Dialer: tr.dial, PingInterval: -1})
	testenv.ServeTooling(t, m, nil)
	waitConnected(t, m)
	errc := make(chan error, 1)
	go func() {
		_, err := m.CallTool(t.Context(), "block", nil)
		errc <- err
	}()
	testenv.Recv(t, ts.SlowStarts(), 10*time.Second, "the call to start")
	tr.dropAll()
	wantCode(t, testenv.Recv(t, errc, 10*time.Second, "the in-flight call to fail"), tooling.CodeUnavailable)
	// The next operation waits for the new session instead of failing.
	res, err := m.CallTool(t.Context(), "echo", json.RawMessage(`{"text":"again"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := firstText(t, res.Value); got != "again" {
		t.Errorf("echo = %q", got)
	}
	if st := m.Status(); st.Restarts < 1 {
		t.Errorf("status = %+v", st)
	}
}

func TestMaxConcurrentCalls(t *testing.T) {
	ts := newTestServer(0)
	cfg := testConfig("narrow")
	cfg.MaxConcurrentCalls = 1
	m := newMCP(t, cfg, nil, mcpclient.Options{Dialer: ts.Dialer()})
	testenv.ServeTooling(t, m, nil)
	waitConnected(t, m)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := m.CallTool(ctx, "block", nil)
		errc <- err
	}()
	testenv.Recv(t, ts.SlowStarts(), 10*time.Second, "the first call to start")
	short, cancelShort := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancelShort()
	_, err := m.CallTool(short, "echo", json.RawMessage(`{"text":"queued"}`))
	wantCode(t, err, tooling.CodeTimeout)
	cancel()
	wantCode(t, testenv.Recv(t, errc, 10*time.Second, "the first call to end"), tooling.CodeCancelled)
	if _, err := m.CallTool(t.Context(), "echo", json.RawMessage(`{"text":"now"}`)); err != nil {
		t.Fatalf("slot not released: %v", err)
	}
}

func TestNewerProtocolVersion(t *testing.T) {
	// go-sdk's default, 2026-07-28, works for list and call when asked for.
	ts := newTestServer(2)
	m := newMCP(t, testConfig("v2026"), nil, mcpclient.Options{Dialer: ts.Dialer(), ProtocolVersion: "2026-07-28"})
	testenv.ServeTooling(t, m, nil)
	waitConnected(t, m)
	tools, err := m.ListTools(t.Context())
	if err != nil || len(tools) != 10 {
		t.Fatalf("ListTools = %d tools, %v", len(tools), err)
	}
	res, err := m.CallTool(t.Context(), "echo", json.RawMessage(`{"text":"new"}`))
	if err != nil || firstText(t, res.Value) != "new" {
		t.Fatalf("CallTool = %+v, %v", res, err)
	}
}
