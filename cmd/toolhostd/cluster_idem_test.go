package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// paceServer is the MCP server of the paced test agent's tooling "pace":
// "delivered" counts the contents the agent's instances were given, on
// any host; "pause" holds each reply delta for a while.
type paceServer struct {
	mu    sync.Mutex
	count map[string]int
}

type paceIn struct {
	Content string `json:"content,omitempty"`
}

func newPaceServer(t *testing.T, pause time.Duration) (*paceServer, string) {
	ps := &paceServer{count: map[string]int{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "pace", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "delivered", Description: "counts a delivery"},
		func(_ context.Context, _ *mcp.CallToolRequest, in paceIn) (*mcp.CallToolResult, any, error) {
			ps.mu.Lock()
			ps.count[in.Content]++
			ps.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "pause", Description: "takes its time"},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ paceIn) (*mcp.CallToolResult, any, error) {
			tm := time.NewTimer(pause) // the agent's pace, not a synchronisation
			defer tm.Stop()
			select {
			case <-tm.C:
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { // a killed host never closed its session
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	return ps, hs.URL
}

// deliveries is how often an instance was given content.
func (ps *paceServer) deliveries(content string) int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.count[content]
}

// runner is the live host whose /v1/agents has agent running, polled up
// to d.
func runner(t *testing.T, hosts map[string]*clusterHost, agent string, d time.Duration) *clusterHost {
	t.Helper()
	var found *clusterHost
	testenv.Eventually(t, d, agent+" running on one host", func() bool {
		found = nil
		for _, h := range hosts {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			st, err := h.ctl.Agent(ctx, agent)
			cancel()
			if err == nil && st.State == "running" {
				if found != nil {
					return false
				}
				found = h
			}
		}
		return found != nil
	})
	return found
}

func sendKey(t *testing.T, h *clusterHost, key, content string) control.MessageStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := h.ctl.Send(ctx, "paced", content, control.SendOptions{IdempotencyKey: key})
	if err != nil {
		t.Fatalf("send %q with key %s to %s: %v", content, key, h.name, err)
	}
	return st
}

// TestClusterIdempotency: three `toolhostd serve` hosts, the paced agent
// (it streams a reply word by word, and tells an MCP tool of each message
// it is given) on one of them. A message with a key completes; another is
// killed mid-reply with its owner (kill -9): its caller's stream ends
// with an error, and once the agent runs on another host a retry with the
// same key is not delivered again but fails with the stated error; the
// completed key replays its reply there; a fresh key delivers. After a
// hand-over by SIGTERM, the completed keys replay again on the third host,
// and each content was given to an instance exactly once.
func TestClusterIdempotency(t *testing.T) {
	const ttl = 3 * time.Second
	noConfig(t)
	e := etcdtest.Start(t, 1)
	pace, paceURL := newPaceServer(t, 150*time.Millisecond)
	rest := fmt.Sprintf("[tooling.pace]\nurl = %q\n\n[agent.paced]\ncomponent = %q\ntoolings = [\"pace\"]\nstop_grace = \"2s\"\n",
		paceURL, testenv.Agent(t, "test-agents", "paced"))
	dir := shortTempDir(t, "i33id")
	hosts := map[string]*clusterHost{}
	for _, name := range []string{"a", "b", "c"} {
		hosts[name] = startClusterHost(t, dir, name, ttl, e.Endpoints(), rest)
	}
	owner := runner(t, hosts, "paced", 60*time.Second)

	// k1 completes on its owner.
	const done1 = "one two three "
	first := sendKey(t, owner, "k1", done1)
	if first.Status != message.StatusDone || first.Reply != done1 {
		t.Fatalf("k1 on %s: %+v", owner.name, first)
	}

	// Its outcome is written just after the reply ended: wait for it, as
	// the caller of a host that dies before cannot count on it.
	cli := etcdtest.Client(t, e.Endpoints()...)
	sum := sha256.Sum256([]byte("k1"))
	k1 := "/toolhostd/idempotency/paced/" + hex.EncodeToString(sum[:])
	testenv.Eventually(t, 10*time.Second, "k1's outcome recorded", func() bool {
		resp, err := cli.Get(context.Background(), k1)
		return err == nil && len(resp.Kvs) == 1 && strings.Contains(string(resp.Kvs[0].Value), `"state":"ended"`)
	})

	// k2 is killed mid-reply with its owner.
	long := strings.Repeat("word ", 40)
	deltas := make(chan string, 64)
	streamErr := make(chan error, 1)
	go func() {
		_, err := owner.ctl.SendStream(context.Background(), "paced", long, control.SendOptions{IdempotencyKey: "k2"},
			func(ev message.Event) { deltas <- ev.Kind })
		streamErr <- err
	}()
	if kind := testenv.Recv(t, deltas, 30*time.Second, "k2's first event"); kind != message.KindDelta {
		t.Fatalf("k2's first event is a %s", kind)
	}
	if err := owner.proc.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-owner.proc.exited
	killed := owner.name
	delete(hosts, killed)
	if err := testenv.Recv(t, streamErr, 30*time.Second, "k2's stream to end"); err == nil {
		t.Error("k2's stream ended without an error after its host was killed mid-reply")
	} else {
		t.Logf("k2's caller saw: %v", err)
	}

	owner = runner(t, hosts, "paced", ttl+30*time.Second)
	retry := sendKey(t, owner, "k2", long)
	want := fmt.Sprintf("was delivered to host %q, which stopped before the reply completed; its outcome is unknown", killed)
	if retry.Status != message.StatusFailed || retry.Error == nil || retry.Error.Code != "unavailable" || !strings.Contains(retry.Error.Message, want) {
		t.Errorf("k2 retried on %s: %+v, want failed unavailable: ...%s", owner.name, retry, want)
	}
	if again := sendKey(t, owner, "k1", done1); again.ID != first.ID || again.Status != message.StatusDone || again.Reply != done1 {
		t.Errorf("k1 retried on %s: %+v, want the reply of message %s", owner.name, again, first.ID)
	}
	const fresh = "fresh key "
	third := sendKey(t, owner, "k3", fresh)
	if third.Status != message.StatusDone || third.Reply != fresh {
		t.Errorf("k3 on %s: %+v", owner.name, third)
	}

	// SIGTERM hands the agent over; the completed keys replay there.
	if err := owner.proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := owner.proc.wait(t, 30*time.Second); err != nil {
		t.Errorf("serve after SIGTERM: %v\n%s", err, tail(owner.proc.out.String(), 4000))
	}
	delete(hosts, owner.name)
	owner = runner(t, hosts, "paced", 30*time.Second)
	if again := sendKey(t, owner, "k3", fresh); again.ID != third.ID || again.Reply != fresh {
		t.Errorf("k3 retried on %s after the hand-over: %+v, want the reply of message %s", owner.name, again, third.ID)
	}
	if again := sendKey(t, owner, "k1", done1); again.ID != first.ID || again.Reply != done1 {
		t.Errorf("k1 retried on %s after the hand-over: %+v", owner.name, again)
	}
	if again := sendKey(t, owner, "k2", long); again.Error == nil || !strings.Contains(again.Error.Message, want) {
		t.Errorf("k2 retried on %s after the hand-over: %+v", owner.name, again)
	}
	const last = "last one "
	if st := sendKey(t, owner, "k4", last); st.Status != message.StatusDone || st.Reply != last {
		t.Errorf("k4 on %s: %+v", owner.name, st)
	}
	for _, c := range []string{done1, long, fresh, last} {
		if n := pace.deliveries(c); n != 1 {
			t.Errorf("%q was given to an instance %d times, want once", c, n)
		}
	}
}
