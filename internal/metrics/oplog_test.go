package metrics_test

import (
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/control/controltest"
	"github.com/toolhostd/toolhostd/internal/metrics"
	"github.com/toolhostd/toolhostd/internal/oplog"
)

// oplogSource is a Source with an oplog store, once one is set.
type oplogSource struct {
	*controltest.Backend
	st atomic.Pointer[oplog.Store]
}

func (s *oplogSource) OplogStats() (oplog.Stats, bool) {
	st := s.st.Load()
	if st == nil {
		return oplog.Stats{}, false
	}
	return st.Stats(), true
}

// TestOplogSeries: the oplog store's appends, entries, bytes and commits
// at scrape time; none while the Source has no store.
func TestOplogSeries(t *testing.T) {
	src := &oplogSource{Backend: controltest.NewBackend()}
	m := metrics.New(metrics.Options{Source: src})
	names := []string{"toolhostd_oplog_appends_total", "toolhostd_oplog_entries_total", "toolhostd_oplog_bytes_total", "toolhostd_oplog_commits_total"}
	f := families(t, m)
	for _, n := range names {
		if f[n] != nil {
			t.Errorf("%s before the store is open", n)
		}
	}

	st, err := oplog.Open(oplog.Options{Path: filepath.Join(t.TempDir(), "oplog.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	src.st.Store(st)
	l, err := st.Open("a", oplog.Header{Component: "c0ffee", Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := l.Append(oplog.Entry{Kind: oplog.KindResult, Call: "f", Data: []byte("result")}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	if _, err := l.Append(oplog.Entry{Kind: oplog.KindResult, Call: "f"}); err == nil {
		t.Fatal("an append to a closed log succeeded")
	}
	want := st.Stats()
	if want.Appends != 4 || want.Entries != 3 || want.Bytes == 0 || want.Commits < 2 {
		t.Fatalf("store stats %+v", want)
	}
	f = families(t, m)
	for i, v := range []uint64{want.Appends, want.Entries, want.Bytes, want.Commits} {
		if got := value(f, names[i]); got != float64(v) {
			t.Errorf("%s = %v, want %d", names[i], got, v)
		}
	}
	if typ := f[names[0]].GetType().String(); typ != "COUNTER" {
		t.Errorf("%s is a %s", names[0], typ)
	}
}

// TestAgentReplays: replays, replayed entries and divergences by agent,
// none before the first; ForgetAgent drops one agent's.
func TestAgentReplays(t *testing.T) {
	m := metrics.New(metrics.Options{})
	const replays, entries, divergences = "toolhostd_agent_replays_total", "toolhostd_agent_replayed_entries_total", "toolhostd_agent_divergences_total"
	f := families(t, m)
	for _, n := range []string{replays, entries, divergences} {
		if f[n] != nil {
			t.Errorf("%s before any replay", n)
		}
	}
	m.AgentReplayed("a", 5)
	m.AgentReplayed("a", 0)
	m.AgentDiverged("a")
	m.AgentReplayed("b", 2)
	f = families(t, m)
	for _, tc := range []struct {
		name, agent string
		want        float64
	}{
		{replays, "a", 2},
		{entries, "a", 5},
		{divergences, "a", 1},
		{replays, "b", 1},
		{entries, "b", 2},
		{divergences, "b", -1},
	} {
		if got := value(f, tc.name, "agent="+tc.agent); got != tc.want {
			t.Errorf("%s{agent=%q} = %v, want %v", tc.name, tc.agent, got, tc.want)
		}
	}
	m.ForgetAgent("a")
	f = families(t, m)
	if value(f, replays, "agent=a") != -1 || value(f, entries, "agent=a") != -1 || value(f, divergences, "agent=a") != -1 {
		t.Error("ForgetAgent left a's replay series")
	}
	if value(f, replays, "agent=b") != 1 || value(f, entries, "agent=b") != 2 {
		t.Error("ForgetAgent of a dropped b's replay series")
	}
}
