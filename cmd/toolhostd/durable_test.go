package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	bolt "go.etcd.io/bbolt"

	"github.com/toolhostd/toolhostd/internal/control"
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
	cfg := writeConfigFile(t, dir, "toolhostd.toml", fmt.Sprintf("version = 1\n[host]\nstate_dir = %q\ncontrol_socket = %q\n\n",
		filepath.Join(dir, "state"), filepath.Join(dir, "ctl.sock"))+
		loopTables(url, component, fmt.Sprintf("restart = \"never\"\ninput = '%s'\n", input)))

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
	noOplogsLeft(t, dir)
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

// TestDurableReplayRefuses: an oplog that cannot be replayed into the
// instance fails that agent alone, with an error that says why, and the
// server sees no call of it: the guest makes another call than the one
// recorded (its input changed: a divergence naming the entry and both
// calls), the component changed, or the oplog is corrupt. The daemon goes
// on serving; the oplog of a divergence or a changed component is dropped,
// so that the agent's next start is a fresh run.
func TestDurableReplayRefuses(t *testing.T) {
	const n, k = 4, 2
	js, qjs := testenv.Agent(t, "test-agents", "durable"), testenv.Agent(t, "test-agents-qjs", "durable")
	echo := testenv.Agent(t, "agents", "echo") // waits for messages: running
	for _, tc := range []struct {
		name       string
		component  string // the second run's
		tool       string // the second run's
		corrupt    bool
		want       []string
		oplogsLeft int
	}{
		{name: "divergence", component: js, tool: "charge",
			want: []string{"replay diverged at oplog entry 1: recorded toolhost:agent/tooling@0.3.0#[method]tooling.call-tool-blocking with (\"step\", \"{\\\"i\\\":1}\") (started)",
				"the guest called toolhost:agent/tooling@0.3.0#[method]tooling.call-tool-blocking with (\"charge\", \"{\\\"i\\\":1}\")"}},
		{name: "component", component: qjs, tool: "step",
			want: []string{"the component changed since its oplog was recorded", `the oplog loop was recorded by component`}},
		{name: "corrupt", component: js, tool: "step", corrupt: true,
			want: []string{`log "loop" is corrupt at entry 2`}, oplogsLeft: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, url := newCountServer(t, k+1)
			dir := t.TempDir()
			sock := filepath.Join(dir, "ctl.sock")
			config := func(component, tool string) string {
				input, _ := json.Marshal(map[string]any{"tool": tool, "n": n})
				return writeConfigFile(t, dir, "toolhostd.toml", fmt.Sprintf(`version = 1
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

[agent.other]
component = %q
`, filepath.Join(dir, "state"), sock, url, component, input, echo))
			}
			first := startServe(t, config(js, "step"))
			testenv.Recv(t, cs.held, 60*time.Second, "call k+1 of the first run")
			if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = first.wait(t, 10*time.Second)
			cs.releaseHeld()
			oplogPath := filepath.Join(dir, "state", "oplog.db")
			if tc.corrupt {
				corruptEntry(t, oplogPath, "loop", 2)
			}
			calls := cs.total()

			second := startServe(t, config(tc.component, tc.tool))
			var st control.AgentStatus
			waitFor(t, 60*time.Second, func() bool {
				c, err := control.Dial(sock)
				if err != nil {
					return false
				}
				defer c.Close()
				st, err = c.Agent(t.Context(), "loop")
				return err == nil && st.State == "failed"
			}, second.out)
			for _, w := range tc.want {
				if !strings.Contains(st.LastError, w) {
					t.Errorf("last_error = %q\nwant it to say %q", st.LastError, w)
				}
			}
			if got := cs.total(); got != calls {
				t.Errorf("the server took %d calls after the restart, want none", got-calls)
			}
			c, err := control.Dial(sock)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			testenv.Eventually(t, 60*time.Second, "the other agent to run", func() bool {
				other, err := c.Agent(t.Context(), "other")
				return err == nil && other.State == "running"
			})
			if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := second.wait(t, 30*time.Second); err != nil {
				t.Fatalf("serve: %v\n%s", err, second.out.String())
			}
			store, err := oplog.Open(oplog.Options{Path: oplogPath})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			if keys, _ := store.Keys(); len(keys) != tc.oplogsLeft {
				t.Errorf("oplogs left: %v, want %d", keys, tc.oplogsLeft)
			}
		})
	}
}

// total is how many tool calls the server took.
func (cs *countServer) total() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.serial
}

// corruptEntry flips a byte of entry seq of the oplog key in the bbolt
// file at path (its layout: internal/oplog's doc).
func corruptEntry(t *testing.T, path, key string, seq uint64) {
	t.Helper()
	// Opening and closing the store folds its journal (what the killed
	// daemon committed last) into the bbolt file.
	st, err := oplog.Open(oplog.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		// The log's id, then its entry seq among every log's in the wal.
		id := tx.Bucket([]byte("logs")).Bucket([]byte(key)).Get([]byte("id"))
		wal := tx.Bucket([]byte("wal"))
		want := binary.BigEndian.AppendUint64(slices.Clone(id), seq)
		c := wal.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if len(v) > len(want) && bytes.HasPrefix(v, want) {
				v = slices.Clone(v)
				v[len(want)+(len(v)-len(want))/2] ^= 0xff
				return wal.Put(k, v)
			}
		}
		return fmt.Errorf("no entry %d of %q (id %x)", seq, key, id)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// dialControl is a client of the control socket of p, once it answers.
func dialControl(t *testing.T, sock string, p *serveProc) *control.Client {
	t.Helper()
	var c *control.Client
	waitFor(t, 60*time.Second, func() bool {
		var err error
		if c, err = control.Dial(sock); err != nil {
			return false
		}
		if c.Health(t.Context()) != nil {
			c.Close()
			return false
		}
		return true
	}, p.out)
	return c
}

// TestDurableAgentRemovedByReload: a reload that removes a durable agent
// mid-run drops its oplog (no start will replay it); one that keeps it
// leaves it alone.
func TestDurableAgentRemovedByReload(t *testing.T) {
	cs, url := newCountServer(t, 2)
	dir := t.TempDir()
	sock := filepath.Join(dir, "ctl.sock")
	head := fmt.Sprintf("version = 1\n[host]\nstate_dir = %q\ncontrol_socket = %q\n\n[tooling.count]\nurl = %q\n",
		filepath.Join(dir, "state"), sock, url)
	loop := fmt.Sprintf("\n[agent.loop]\ncomponent = %q\ntoolings = [\"count\"]\ndurable = true\nrestart = \"never\"\ninput = '{\"tool\":\"step\",\"n\":3}'\n",
		testenv.Agent(t, "test-agents", "durable"))
	other := fmt.Sprintf("\n[agent.other]\ncomponent = %q\ndurable = true\n", testenv.Agent(t, "agents", "echo"))
	cfg := writeConfigFile(t, dir, "toolhostd.toml", head+loop+other)
	p := startServe(t, cfg)
	testenv.Recv(t, cs.held, 60*time.Second, "call 2 of the loop")
	c := dialControl(t, sock, p)
	defer c.Close()
	testenv.Eventually(t, 30*time.Second, "the other agent to run", func() bool {
		a, err := c.Agent(t.Context(), "other")
		return err == nil && a.State == "running"
	})
	writeConfigFile(t, dir, "toolhostd.toml", head+other)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the reload to remove loop", func() bool {
		_, err := c.Agent(t.Context(), "loop")
		return errors.Is(err, control.ErrUnknownAgent)
	})
	cs.releaseHeld()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil { // other's oplog stays, as a crash leaves it
		t.Fatal(err)
	}
	_ = p.wait(t, 10*time.Second)
	st, err := oplog.Open(oplog.Options{Path: filepath.Join(dir, "state", "oplog.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if keys, err := st.Keys(); err != nil || !slices.Equal(keys, []string{"other"}) {
		t.Errorf("oplogs after the reload removed loop: %v %v, want [other]", keys, err)
	}
}

// TestDurableRun: `toolhostd run` of a durable configured agent (the
// durable test agent built with componentize-qjs, its loop of n calls)
// killed (-9) while call k+1 is out, then run again with the same
// command: the second run replays the first's calls from the state
// directory's oplog (the server takes calls 1..k once, the read-only one
// out at the kill twice), prints the whole result, and its end ends the
// oplog.
func TestDurableRun(t *testing.T) {
	const n, k = 5, 2
	cs, url := newCountServer(t, k+1)
	dir := t.TempDir()
	component := testenv.Agent(t, "test-agents-qjs", "durable")
	input, _ := json.Marshal(map[string]any{"tool": "step", "n": n})
	cfg := writeConfigFile(t, dir, "toolhostd.toml", fmt.Sprintf("version = 1\n[host]\nstate_dir = %q\n\n", filepath.Join(dir, "state"))+
		loopTables(url, component, ""))

	first := startToolhostd(t, nil, "--config", cfg, "run", "--input", string(input), component)
	killWhenHeld(t, first, cs.held, "call k+1")
	cs.releaseHeld()

	second := startToolhostd(t, nil, "--config", cfg, "run", "--input", string(input), component)
	got := testenv.Recv(t, cs.done, 60*time.Second, "the resumed run's done call")
	if err := second.wait(t, 30*time.Second); err != nil {
		t.Fatalf("the second run: %v\n%s", err, second.out.String())
	}
	if len(got) != n {
		t.Fatalf("done got %d results, want %d: %q\n%s", len(got), n, got, second.out.String())
	}
	for i := 1; i <= n; i++ {
		key := fmt.Sprintf("step %d", i)
		want := 1
		if i == k+1 {
			want = 2 // read-only: made again after the kill
		}
		if c := cs.count(key); c != want {
			t.Errorf("the server took %q %d times, want %d", key, c, want)
		}
		if !strings.HasPrefix(got[i-1], key+" #") {
			t.Errorf("result %d = %q, want %q's", i, got[i-1], key)
		}
	}
	if out := second.out.String(); !strings.Contains(out, "resuming from its oplog") {
		t.Errorf("the second run did not say it resumed from its oplog\n%s", out)
	}
	noOplogsLeft(t, dir)
}

// loopTables are the config tables of the durable tests' loop agent: the
// count server's tooling at url and [agent.loop], durable, of component,
// with extra keys of its table after.
func loopTables(url, component, extra string) string {
	return fmt.Sprintf("[tooling.count]\nurl = %q\n\n[agent.loop]\ncomponent = %q\ntoolings = [\"count\"]\ndurable = true\n%s", url, component, extra)
}

// pacedTables are the config tables of the durable message tests' paced
// agent: the hold-pace server's tooling at url and [agent.paced],
// durable, of the paced test agent, with extra keys of its table after.
func pacedTables(t *testing.T, url, extra string) string {
	return fmt.Sprintf("[tooling.pace]\nurl = %q\n\n[agent.paced]\ncomponent = %q\ntoolings = [\"pace\"]\ndurable = true\n%s",
		url, testenv.Agent(t, "test-agents", "paced"), extra)
}

// killWhenHeld kills p (SIGKILL) once held is closed (the call the test's
// server holds is out), failing t if p exits first or held is not closed
// within a minute (what names the call); it returns once p exited.
func killWhenHeld(t *testing.T, p *serveProc, held <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-held:
	case <-p.exited:
		t.Fatalf("toolhostd exited before %s: %v\n%s", what, p.err, p.out.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("%s not made\n%s", what, p.out.String())
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.wait(t, 10*time.Second)
}

// noOplogsLeft fails the test unless the oplog file of the state
// directory under dir holds no log: every run that returned ended its own.
func noOplogsLeft(t *testing.T, dir string) {
	t.Helper()
	st, err := oplog.Open(oplog.Options{Path: filepath.Join(dir, "state", "oplog.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if keys, err := st.Keys(); err != nil || len(keys) != 0 {
		t.Errorf("oplogs left after the run returned: %v %v", keys, err)
	}
}
