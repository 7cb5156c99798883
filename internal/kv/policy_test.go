package kv_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/kv"
)

// TestPolicyOf: an agent's stores and store keys become its Policy; an
// agent without them may open any bucket, unbounded.
func TestPolicyOf(t *testing.T) {
	c, err := config.Parse("t.toml", []byte(`version = 1
[agent.a]
component = "a.wasm"
stores = ["notes", "cache-*"]
store = { max_keys = 1, max_bytes = "1KiB" }
[agent.b]
component = "b.wasm"
`))
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.OpenBolt(filepath.Join(t.TempDir(), "kv.db"), kv.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, cx := kv.New(st, kv.Options{}), ctx(t)
	pa, pb := kv.PolicyOf(c.Agent["a"]), kv.PolicyOf(c.Agent["b"])
	if pa.Quota != (kv.Quota{MaxKeys: 1, MaxBytes: 1024}) {
		t.Errorf("quota %+v", pa.Quota)
	}
	for _, tc := range []struct {
		p    kv.Policy
		id   string
		want kv.Kind
		ok   bool
	}{
		{pa, "notes", 0, true}, {pa, "cache-x", 0, true}, {pa, "other", kv.KindAccessDenied, false},
		{pb, "anything", 0, true}, {pb, "session", kv.KindNoSuchStore, false},
	} {
		_, err := s.Open("a", "", tc.p, tc.id)
		if (err == nil) != tc.ok || (err != nil && kv.KindOf(err) != tc.want) {
			t.Errorf("open(%q) with %q: %v", tc.id, tc.p.Stores, err)
		}
	}
	b := open(t, s, "a", "", pa, "notes")
	if err := b.Set(cx, "one", nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Set(cx, "two", nil); err == nil {
		t.Error("a second key past max_keys = 1 was written")
	}
}

// TestOpenConfigured: the default backend of one host is bbolt's kv.db in
// the state directory.
func TestOpenConfigured(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	c, err := config.Parse("t.toml", []byte("version = 1\n[host]\nstate_dir = \""+dir+"\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.OpenConfigured(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if b, ok := st.(*kv.Bolt); !ok || b.Path() != filepath.Join(dir, "kv.db") {
		t.Errorf("store %T at %v; want bbolt at %s", st, st, filepath.Join(dir, "kv.db"))
	}
	c.Host.Store.Backend = config.StoreEtcd
	if _, err := kv.OpenConfigured(c, nil); err == nil {
		t.Error("etcd without a client opened")
	}
}

// TestOpsAndKeys: operations are counted by kind and outcome, usage by
// agent, and the operators' listing filters by prefix and pages.
func TestOpsAndKeys(t *testing.T) {
	st, err := kv.OpenBolt(filepath.Join(t.TempDir(), "kv.db"), kv.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, cx := kv.New(st, kv.Options{}), ctx(t)
	b := open(t, s, "a", "", kv.Policy{Quota: kv.Quota{MaxKeys: 3}}, "x")
	for _, k := range []string{"p/1", "p/2", "q"} {
		if err := b.Set(cx, k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	_ = b.Set(cx, "over", nil)                                    // quota
	_, _ = s.Open("a", "", kv.Policy{Stores: []string{"x"}}, "y") // access_denied
	_, _, _ = b.Get(cx, "q")                                      // ok
	want := []kv.OpCount{
		{Op: "open", Outcome: "ok", N: 1}, {Op: "open", Outcome: "access_denied", N: 1},
		{Op: "get", Outcome: "ok", N: 1}, {Op: "set", Outcome: "ok", N: 3}, {Op: "set", Outcome: "quota", N: 1},
	}
	if got := s.Ops(); !slices.Equal(got, want) {
		t.Errorf("ops %+v\nwant %+v", got, want)
	}
	keys, more, err := s.Keys(cx, b.Ref(), "p/", "", 1)
	if err != nil || !more || !slices.Equal(keys, []string{"p/1"}) {
		t.Errorf("first page of p/: %q, %v, %v", keys, more, err)
	}
	keys, more, err = s.Keys(cx, b.Ref(), "p/", "p/1", 1)
	if err != nil || more || !slices.Equal(keys, []string{"p/2"}) {
		t.Errorf("second page of p/: %q, %v, %v", keys, more, err)
	}
	u, err := s.Usage(cx)
	if err != nil || !slices.Equal(u, []kv.AgentUsage{{Agent: "a", Usage: kv.Usage{Keys: 3, Bytes: 4 + 4 + 2}}}) {
		t.Errorf("usage %+v, %v", u, err)
	}
}
