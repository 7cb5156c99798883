package host

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/oplog"
)

// TestDurableRepeatableStarted: a durable instance's call of a tool its
// server says may be made again (peek: readOnlyHint) is not made durable
// before it is issued, as a crash that loses its entry makes replay issue
// it again, which repeats nothing: n such calls commit nothing of their
// own (their entries go with the next durable one, here the log's Close).
// A call of a tool that says nothing (echo) commits its started entry
// before it is issued, each its own transaction. Either way every call is
// recorded, started and completed, and a replay answers all of them
// without calling the server.
func TestDurableRepeatableStarted(t *testing.T) {
	s := env(t)
	p := s.program(t, durableGuest.dir(), "bench")
	const n = 20
	for _, tc := range []struct {
		tool                   string
		minCommits, maxCommits uint64
	}{
		{tool: "echo", minCommits: n, maxCommits: 2 * n},
		{tool: "peek", minCommits: 0, maxCommits: 0},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			st, err := oplog.Open(oplog.Options{Path: filepath.Join(t.TempDir(), "oplog.db")})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			in, _ := json.Marshal(map[string]any{"tooling": "mem", "tool": tc.tool, "arguments": echoArgs, "n": n})
			run := func() (out string, commits uint64) {
				l, err := st.Open("bench", oplog.Header{Component: p.Content(), Started: time.Now()})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				before := st.Stats().Commits
				out, err = s.host.Start(p, AgentConfig{Name: "bench", Durable: Durability{Oplog: l}}, string(in)).Wait()
				if err != nil {
					t.Fatalf("bench agent: %v", err)
				}
				return out, st.Stats().Commits - before
			}
			_, commits := run()
			if commits < tc.minCommits || commits > tc.maxCommits {
				t.Errorf("%d calls of %s committed %d transactions; want %d to %d", n, tc.tool, commits, tc.minCommits, tc.maxCommits)
			}
			_, entries, err := st.Entries("bench")
			if err != nil {
				t.Fatal(err)
			}
			started, completed := 0, 0
			for _, e := range entries {
				if e.Call != "toolhost:agent/tooling@0.3.0#[method]tooling.call-tool-blocking" {
					continue
				}
				switch e.Kind {
				case oplog.KindStarted:
					started++
				case oplog.KindCompleted:
					completed++
				}
			}
			if started != n || completed != n {
				t.Errorf("the oplog holds %d started and %d completed calls; want %d of each", started, completed, n)
			}
			peeksBefore, echoes := peeks.Load(), s.mem.Calls("echo")
			again, _ := run() // replayed: every call from the oplog
			var res struct {
				NS     []int64 `json:"ns"`
				Errors int     `json:"errors"`
			}
			if err := json.Unmarshal([]byte(again), &res); err != nil || res.Errors != 0 || len(res.NS) != n {
				t.Errorf("replayed, the agent said %.200q (%v); want %d calls, no error", again, err, n)
			}
			if d1, d2 := peeks.Load()-peeksBefore, s.mem.Calls("echo")-echoes; d1 != 0 || d2 != 0 {
				t.Errorf("the replay called the server %d times (peek) and %d (echo); want none", d1, d2)
			}
		})
	}
}
