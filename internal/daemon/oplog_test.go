package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/oplog"
)

// seedOplog writes the logs (key -> entry count) into the oplog file of
// the state directory, as instances cut off would have left them.
func seedOplog(t *testing.T, state string, logs map[string]int) {
	t.Helper()
	st, err := oplog.Open(oplog.Options{Path: filepath.Join(state, config.OplogFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for key, n := range logs {
		l, err := st.Open(key, oplog.Header{Component: "c0ffee", Started: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if _, err := l.Append(oplog.Entry{Kind: oplog.KindResult, Call: "wasi:clocks/wall-clock@0.2.0#now", Data: fmt.Appendf(nil, "r%d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		l.Close()
	}
}

// TestOplogBackend: the daemon's oplogs as the control API gets them (a
// daemon not served: its agents never start, so the seeded logs stay):
// each durable agent's status sums its logs, Oplog reads one, and every
// agent without one is ErrNoOplog saying why.
func TestOplogBackend(t *testing.T) {
	state := t.TempDir()
	// talk/#m1: the instance of talk's one-off message m1; talk/##hash:
	// of its session "#hash".
	seedOplog(t, state, map[string]int{"loop": 3, "talk/alice": 2, "talk/bob": 1, "talk/#m1": 1, "talk/##hash": 1, "gone": 4})
	r := build(t, writeConfig(t, t.TempDir(), headerState(t, state)+fmt.Sprintf(`[agent.loop]
component = %[1]q
durable = true

[agent.talk]
component = %[1]q
durable = true
instances = "per-session"

[agent.plain]
component = %[1]q
`, wat(t, "ok"))))
	t.Cleanup(func() { r.d.Close() })

	byName := map[string]control.AgentStatus{}
	for _, a := range r.d.Agents() {
		byName[a.Name] = a
	}
	if o := byName["loop"].Oplog; o == nil || o.Entries != 3 || o.Bytes == 0 || o.Logs != 0 {
		t.Errorf("loop's oplog %+v, want 3 entries", o)
	}
	if o := byName["talk"].Oplog; o == nil || o.Entries != 5 || o.Logs != 4 {
		t.Errorf("talk's oplog %+v, want 5 entries in 4 logs", o)
	}
	if o := byName["plain"].Oplog; o != nil {
		t.Errorf("a non-durable agent's oplog %+v", o)
	}

	l, err := r.d.Oplog("loop", "", false)
	if err != nil || l.Key != "loop" || l.Component != "c0ffee" || len(l.Entries) != 3 || l.Started.IsZero() {
		t.Fatalf("Oplog(loop) = %+v, %v", l, err)
	}
	for i, e := range l.Entries {
		if e.Seq != uint64(i+1) || e.Kind != "result" || e.Call != "wasi:clocks/wall-clock@0.2.0#now" || e.Bytes != 2 || e.Data != nil || e.At.IsZero() {
			t.Errorf("entry %d: %+v", i+1, e)
		}
	}
	if l, err := r.d.Oplog("loop", "", true); err != nil || string(l.Entries[2].Data) != "r2" {
		t.Errorf("Oplog(loop, content) = %+v, %v", l, err)
	}
	for session, key := range map[string]string{"alice": "talk/alice", "#m1": "talk/#m1", "#hash": "talk/##hash"} {
		if l, err := r.d.Oplog("talk", session, false); err != nil || l.Key != key || len(l.Entries) == 0 {
			t.Errorf("Oplog(talk, %q) = %+v, %v, want the log %q", session, l, err, key)
		}
	}
	for _, tc := range []struct {
		agent, session string
		err            error
		has            string
	}{
		{"talk", "", control.ErrNoOplog, "name one (talk/SESSION); those with one: #hash, #m1 (a one-off message's), alice, bob"},
		{"talk", "carol", control.ErrNoOplog, `no oplog of "talk/carol": no instance of it runs`},
		{"loop", "x", control.ErrNoOplog, `"loop" is not a per-session agent`},
		{"plain", "", control.ErrNoOplog, `no oplog of "plain": the agent is not durable`},
		{"nope", "", control.ErrUnknownAgent, `"nope"`},
	} {
		_, err := r.d.Oplog(tc.agent, tc.session, false)
		if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.has) {
			t.Errorf("Oplog(%s, %q): %v, want %v saying %q", tc.agent, tc.session, err, tc.err, tc.has)
		}
	}
	if st, ok := r.d.OplogStats(); !ok || st.Appends != 0 {
		t.Errorf("OplogStats = %+v, %v: want the store reading opened, nothing appended", st, ok)
	}
}

// TestOplogNoDurable: a config without a durable agent has no oplog, and
// asking for one (or for ps) creates no file.
func TestOplogNoDurable(t *testing.T) {
	state := t.TempDir()
	r := build(t, writeConfig(t, t.TempDir(), headerState(t, state)+fmt.Sprintf("[agent.plain]\ncomponent = %q\n", wat(t, "ok"))))
	t.Cleanup(func() { r.d.Close() })
	if a := r.agent(t, "plain"); a.Oplog != nil {
		t.Errorf("oplog %+v", a.Oplog)
	}
	if _, err := r.d.Oplog("plain", "", false); !errors.Is(err, control.ErrNoOplog) || !strings.Contains(err.Error(), "no agent is durable here") {
		t.Errorf("Oplog(plain): %v", err)
	}
	if _, ok := r.d.OplogStats(); ok {
		t.Error("OplogStats of a daemon without an oplog store")
	}
	if _, err := os.Stat(filepath.Join(state, config.OplogFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the oplog file: %v, want none", err)
	}
}

// TestOplogNoFile: a durable agent before any of its instances made the
// oplog file: its status says it holds nothing, it has no oplog, and
// asking creates no file.
func TestOplogNoFile(t *testing.T) {
	state := t.TempDir()
	r := build(t, writeConfig(t, t.TempDir(), headerState(t, state)+fmt.Sprintf(`[agent.loop]
component = %[1]q
durable = true

[agent.talk]
component = %[1]q
durable = true
instances = "per-session"
`, wat(t, "ok"))))
	t.Cleanup(func() { r.d.Close() })
	for _, name := range []string{"loop", "talk"} {
		if o := r.agent(t, name).Oplog; o == nil || o.Entries != 0 || o.Bytes != 0 || o.Logs != 0 {
			t.Errorf("%s's oplog %+v, want an empty one", name, o)
		}
	}
	for _, tc := range []struct{ agent, session, has string }{
		{"loop", "", `no oplog of "loop": no instance of it runs`},
		{"talk", "", "none has one"},
		{"talk", "alice", `no oplog of "talk/alice": no instance of it runs`},
	} {
		if _, err := r.d.Oplog(tc.agent, tc.session, false); !errors.Is(err, control.ErrNoOplog) || !strings.Contains(err.Error(), tc.has) {
			t.Errorf("Oplog(%s, %q): %v, want it saying %q", tc.agent, tc.session, err, tc.has)
		}
	}
	if _, ok := r.d.OplogStats(); ok {
		t.Error("OplogStats of a daemon that never opened its oplog store")
	}
	if _, err := os.Stat(filepath.Join(state, config.OplogFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the oplog file: %v, want none", err)
	}
}
