package main

import (
	"context"
	"encoding/json"
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

	"github.com/toolhostd/toolhostd/internal/oplog"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// countServer is the MCP server of the durable test agent's tooling
// "count": "step" (idempotent by its annotations) and "charge" (not)
// answer call i with "<tool> <i> #<serial>", serial counting every call
// the server took, so that a result answered from an oplog shows the
// serial of the run that made it; the call holdAt of the first run is
// held until its client goes away; "done" hands the agent's results over.
type countServer struct {
	holdAt  int
	held    chan struct{} // closed when call holdAt is taken
	release chan struct{} // closed to end the held call (its host was killed)
	done    chan []string // the results "done" was given

	mu     sync.Mutex
	serial int
	calls  map[string]int // "<tool> <i>" -> how often it was called
	once   bool           // holdAt was held
}

type countIn struct {
	I       int      `json:"i,omitempty"`
	Results []string `json:"results,omitempty"`
}

func newCountServer(t *testing.T, holdAt int) (*countServer, string) {
	cs := &countServer{holdAt: holdAt, held: make(chan struct{}), release: make(chan struct{}), done: make(chan []string, 4), calls: map[string]int{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "count", Version: "1"}, nil)
	tool := func(name string, ann *mcp.ToolAnnotations) {
		mcp.AddTool(srv, &mcp.Tool{Name: name, Annotations: ann},
			func(ctx context.Context, _ *mcp.CallToolRequest, in countIn) (*mcp.CallToolResult, any, error) {
				key := fmt.Sprintf("%s %d", name, in.I)
				cs.mu.Lock()
				cs.serial++
				n := cs.serial
				cs.calls[key]++
				hold := in.I == cs.holdAt && !cs.once
				if hold {
					cs.once = true
				}
				cs.mu.Unlock()
				if hold {
					close(cs.held)
					select { // the host that made it is killed
					case <-cs.release:
					case <-ctx.Done():
					}
					return nil, nil, errors.New("released")
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s #%d", key, n)}}}, nil, nil
			})
	}
	tool("step", &mcp.ToolAnnotations{IdempotentHint: true})
	tool("charge", nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "done"},
		func(_ context.Context, _ *mcp.CallToolRequest, in countIn) (*mcp.CallToolResult, any, error) {
			cs.done <- in.Results
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { // a killed host never closed its session
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	t.Cleanup(cs.releaseHeld)
	return cs, hs.URL
}

// releaseHeld ends the held call, once.
func (cs *countServer) releaseHeld() {
	select {
	case <-cs.release:
	default:
		close(cs.release)
	}
}

func (cs *countServer) count(key string) int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.calls[key]
}

// TestDurableAgentSurvivesKill: a durable agent in a tool loop of n calls
// against a real MCP server; its host (`toolhostd serve`) is killed with
// SIGKILL while call k+1 is out. Started again, it replays the k calls
// from its oplog (the server does not see them again: their results keep
// the first run's serials), then the call that was out is issued again
// only when its tool is idempotent by its annotations; otherwise the
// guest gets unavailable, "outcome unknown after a restart", and goes on.
// The run completes with all n results in order, and its oplog ends with it.
func TestDurableAgentSurvivesKill(t *testing.T) {
	const n, k = 6, 3
	for _, dir := range []string{"test-agents", "test-agents-qjs", "test-agents-go"} {
		for _, tc := range []struct {
			tool   string
			repeat bool
		}{
			{"step", true},
			{"charge", false},
		} {
			t.Run(dir+"/"+tc.tool, func(t *testing.T) {
				durableKill(t, testenv.Agent(t, dir, "durable"), tc.tool, tc.repeat, n, k)
			})
		}
	}
}

// durableKill is one run of TestDurableAgentSurvivesKill: component's
// loop of n calls of tool, its host killed while call k+1 is out.
func durableKill(t *testing.T, component, tool string, repeat bool, n, k int) {
	cs, url := newCountServer(t, k+1)
	dir := t.TempDir()
	input, _ := json.Marshal(map[string]any{"tool": tool, "n": n})
	cfg := writeConfigFile(t, dir, "toolhostd.toml", fmt.Sprintf(`version = 1
[host]
state_dir = %q
control_socket = %q

[tooling.count]
url = %q

[agent.loop]
component = %q
toolings = ["count"]
durable = true
restart = "never"
input = '%s'
`, filepath.Join(dir, "state"), filepath.Join(dir, "ctl.sock"), url, component, input))

	first := startServe(t, cfg)
	testenv.Recv(t, cs.held, 60*time.Second, "call k+1 of the first run")
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.wait(t, 10*time.Second)
	cs.releaseHeld()
	logged := resultLines(first.out.String())
	if len(logged) != k {
		t.Fatalf("the first run logged %d results, want %d\n%s", len(logged), k, first.out.String())
	}

	second := startServe(t, cfg)
	got := testenv.Recv(t, cs.done, 60*time.Second, "the resumed run's done call")
	if len(got) != n {
		t.Fatalf("done got %d results, want %d: %q\n%s", len(got), n, got, second.out.String())
	}
	for i := 1; i <= n; i++ {
		key := fmt.Sprintf("%s %d", tool, i)
		want := 1
		if i == k+1 && repeat {
			want = 2
		}
		if c := cs.count(key); c != want {
			t.Errorf("the server took %q %d times, want %d", key, c, want)
		}
		res := got[i-1]
		switch {
		case i == k+1 && !repeat:
			if res != "unavailable: outcome unknown after a restart" {
				t.Errorf("result %d = %q, want the outcome-unknown error", i, res)
			}
		case !strings.HasPrefix(res, key+" #"):
			t.Errorf("result %d = %q, want %q's", i, res, key)
		case i <= k && res != logged[i]:
			// The server's serial, the wall clock and the random value
			// are the first run's: answered from the oplog.
			t.Errorf("result %d = %q, the first run had %q", i, res, logged[i])
		}
	}
	testenv.Eventually(t, 30*time.Second, "the resumed run to return", func() bool {
		return strings.Contains(second.out.String(), "agent run returned ok")
	})
	out := second.out.String()
	if !strings.Contains(out, "resuming from its oplog") {
		t.Errorf("the second host did not say it resumed from the oplog\n%s", out)
	}
	again := resultLines(out)
	for i := 1; i <= n; i++ {
		if _, ok := again[i]; ok != (i > k) {
			t.Errorf("the resumed run logged result %d: %v; a replay writes no log line again, what comes after it does", i, ok)
		}
	}
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.wait(t, 30*time.Second); err != nil {
		t.Fatalf("serve: %v\n%s", err, out)
	}
	st, err := oplog.Open(oplog.Options{Path: filepath.Join(dir, "state", "oplog.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if keys, err := st.Keys(); err != nil || len(keys) != 0 {
		t.Errorf("oplogs left after the run returned: %v %v", keys, err)
	}
}

// resultLines are the "result i: ..." lines the durable agent logged:
// the text of each, by i.
func resultLines(out string) map[int]string {
	rs := map[int]string{}
	for _, line := range strings.Split(out, "\n") {
		_, rest, ok := strings.Cut(line, "result ")
		if !ok {
			continue
		}
		num, text, ok := strings.Cut(rest, ": ")
		var i int
		if _, err := fmt.Sscan(num, &i); !ok || err != nil {
			continue
		}
		text, _, _ = strings.Cut(text, "\t") // the log line's fields
		rs[i] = strings.TrimSpace(text)
	}
	return rs
}
