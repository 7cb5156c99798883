package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/kv"
	"github.com/toolhostd/toolhostd/internal/system"
)

// TestStoreWontOpen: a key-value store that cannot be opened at start
// (its bbolt file locked by another daemon on the same state directory,
// or not a bbolt file) makes New fail with the message naming the file
// and what to do; nothing is left running.
func TestStoreWontOpen(t *testing.T) {
	cases := []struct {
		name    string
		prepare func(t *testing.T, cfgPath, dbPath string)
		want    []string
	}{
		{"locked by another daemon", func(t *testing.T, cfgPath, _ string) {
			r := serve(t, cfgPath)
			r.waitAgent(t, "a", "running", isRunning)
		}, []string{"is locked by another process", "another toolhostd with the same state_dir"}},
		{"not a bbolt file", func(t *testing.T, _, dbPath string) {
			if err := os.MkdirAll(filepath.Dir(dbPath), 0o700); err != nil {
				t.Fatal(err)
			}
			garbage := []byte(strings.Repeat("this is not a bbolt file\n", 1000))
			if err := os.WriteFile(dbPath, garbage, 0o600); err != nil {
				t.Fatal(err)
			}
		}, []string{"is corrupt or not a bbolt file", "move it away", "kv import"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			state := filepath.Join(dir, "state")
			path := writeConfig(t, dir, headerState(t, state)+fmt.Sprintf("[agent.a]\ncomponent = %q\nstop_grace = \"50ms\"\n", wat(t, "spin")))
			db := filepath.Join(state, config.StoreFile)
			tc.prepare(t, path, db)
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			d, err := New(path, cfg, Options{})
			if err == nil {
				d.Close()
				t.Fatal("New opened the daemon")
			}
			var se *system.StoreError
			if !errors.As(err, &se) {
				t.Errorf("error %v (%T) is not a system.StoreError", err, err)
			}
			for _, w := range append(tc.want, db) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestInstanceBuckets: each instance's store.open is bound to its agent,
// its session and its agent's stores and store: a single agent's
// open("session") is no-such-store, a per-session instance's is its
// session's own bucket; the stores list is enforced, and so is the quota;
// the same identifier in two agents names two buckets; a reload that
// changes an agent's stores applies to its instances started after it.
func TestInstanceBuckets(t *testing.T) {
	dir := t.TempDir()
	text := func(stores string) string {
		return header(t) + fmt.Sprintf(`[agent.a]
component = %q
stop_grace = "50ms"
stores = %s
store = { max_keys = 2 }

[agent.b]
component = %q
stop_grace = "50ms"
`, wat(t, "spin"), stores, wat(t, "spin"))
	}
	path := writeConfig(t, dir, text(`["notes", "session"]`))
	r := serve(t, path)
	r.waitAgent(t, "a", "running", isRunning)
	ctx := context.Background()
	instanceConfig := func(name, session string) host.AgentConfig {
		t.Helper()
		cfg, ok := r.d.g.Agents.InstanceConfig(name, nil, session)
		if !ok {
			t.Fatalf("agent %s has no service", name)
		}
		return cfg
	}

	if cfg := instanceConfig("a", ""); cfg.OpenBucket == nil {
		t.Fatal("agentConfig has no OpenBucket")
	}
	open := instanceConfig("a", "").OpenBucket
	if _, err := open("session"); kv.KindOf(err) != kv.KindNoSuchStore {
		t.Errorf(`a single agent's open("session"): %v, want no-such-store`, err)
	}
	if _, err := open("other"); kv.KindOf(err) != kv.KindAccessDenied {
		t.Errorf(`open("other") outside stores: %v, want access-denied`, err)
	}
	notes, err := open("notes")
	if err != nil {
		t.Fatal(err)
	}
	if err := notes.Set(ctx, "k", []byte("from a")); err != nil {
		t.Fatal(err)
	}
	sess, err := instanceConfig("a", "s1").OpenBucket("session")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sess.Ref(), (kv.Ref{Agent: "a", Bucket: "session/s1"}); got != want {
		t.Errorf(`a per-session instance's open("session") is %v, want %v`, got, want)
	}
	if err := sess.Set(ctx, "turns", []byte("[]")); err != nil {
		t.Fatal(err)
	}
	var qe *kv.QuotaError
	if err := sess.Set(ctx, "third", []byte("x")); !errors.As(err, &qe) {
		t.Errorf("a third key past max_keys = 2: %v, want a quota error", err)
	}

	bNotes, err := instanceConfig("b", "").OpenBucket("notes")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := bNotes.Get(ctx, "k"); err != nil || ok {
		t.Errorf("agent b's notes hold agent a's key: ok %v, err %v", ok, err)
	}
	if v, ok, err := r.d.KV().Get(ctx, kv.Ref{Agent: "a", Bucket: "notes"}, "k"); err != nil || !ok || string(v) != "from a" {
		t.Errorf("the operators' get of a/notes k: %q %v %v", v, ok, err)
	}

	// A reload that widens a's stores: its service is started afresh and
	// its instances may open "other".
	old := r.d.g.Agents.Instance("a")
	writeConfig(t, dir, text(`["*"]`))
	if err := r.d.Reload(); err != nil {
		t.Fatal(err)
	}
	r.waitAgent(t, "a", "running again", isRunning)
	if r.d.g.Agents.Instance("a") == old {
		t.Fatal("the reload did not start agent a afresh")
	}
	if _, err := instanceConfig("a", "").OpenBucket("other"); err != nil {
		t.Errorf(`open("other") after the reload allowed it: %v`, err)
	}
}
