package metrics_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolhostd/toolhostd/internal/kv"
	"github.com/toolhostd/toolhostd/internal/metrics"
)

// kvService is a Service on a real bbolt store in a temporary directory.
func kvService(t *testing.T) *kv.Service {
	t.Helper()
	st, err := kv.OpenBolt(filepath.Join(t.TempDir(), "kv.db"), kv.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return kv.New(st, kv.Options{})
}

// TestKVSeries: keys and bytes per agent, and operations by kind and
// outcome, from the store; none before KV is called.
func TestKVSeries(t *testing.T) {
	m := metrics.New(metrics.Options{})
	svc := kvService(t)
	ctx := t.Context()
	if f := families(t, m); f["toolhostd_kv_keys"] != nil || f["toolhostd_kv_operations_total"] != nil {
		t.Fatal("key-value series before KV")
	}
	m.KV(svc)

	pol := kv.Policy{Stores: []string{"notes"}, Quota: kv.Quota{MaxKeys: 2}}
	b, err := svc.Open("a", "", pol, "notes")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Open("a", "", pol, "other"); !errors.Is(err, kv.ErrAccessDenied) {
		t.Fatalf("open outside stores: %v", err)
	}
	for _, k := range []string{"k1", "k2"} {
		if err := b.Set(ctx, k, []byte("12345")); err != nil {
			t.Fatal(err)
		}
	}
	var qe *kv.QuotaError
	if err := b.Set(ctx, "k3", []byte("x")); !errors.As(err, &qe) {
		t.Fatalf("a third key: %v, want a quota error", err)
	}
	if _, _, err := b.Get(ctx, "k1"); err != nil {
		t.Fatal(err)
	}
	if err := svc.Put(ctx, kv.Ref{Agent: "b", Bucket: "x"}, "key", []byte("v")); err != nil {
		t.Fatal(err)
	}

	f := families(t, m)
	const ops = "toolhostd_kv_operations_total"
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"toolhostd_kv_keys", []string{"agent=a"}, 2},
		{"toolhostd_kv_bytes", []string{"agent=a"}, 2 * (2 + 5)},
		{"toolhostd_kv_keys", []string{"agent=b"}, 1},
		{"toolhostd_kv_bytes", []string{"agent=b"}, 3 + 1},
		{ops, []string{"op=open", "outcome=ok"}, 1},
		{ops, []string{"op=open", "outcome=access_denied"}, 1},
		{ops, []string{"op=set", "outcome=ok"}, 2},
		{ops, []string{"op=set", "outcome=quota"}, 1},
		{ops, []string{"op=get", "outcome=ok"}, 1},
		{ops, []string{"op=admin", "outcome=ok"}, 1},
		{ops, []string{"op=delete"}, -1},
	} {
		if got := value(f, tc.name, tc.labels...); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	m.KV(nil)
	if f := families(t, m); f["toolhostd_kv_keys"] != nil {
		t.Error("key-value series after KV(nil)")
	}
}

// usageCounter is a KVSource that counts its Usage reads.
type usageCounter struct {
	reads int
	keys  int64
}

func (u *usageCounter) Ops() []kv.OpCount { return nil }

func (u *usageCounter) Usage(context.Context) ([]kv.AgentUsage, error) {
	u.reads++
	return []kv.AgentUsage{{Agent: "a", Usage: kv.Usage{Keys: u.keys}}}, nil
}

// TestKVUsageBounded: scrapes read the store's usage at most once per 10
// seconds; in between they report the last read.
func TestKVUsageBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := metrics.New(metrics.Options{})
		src := &usageCounter{keys: 1}
		m.KV(src)
		scrape := func() float64 { return value(families(t, m), "toolhostd_kv_keys", "agent=a") }
		if got := scrape(); got != 1 || src.reads != 1 {
			t.Fatalf("first scrape: %v after %d reads", got, src.reads)
		}
		src.keys = 5
		time.Sleep(9 * time.Second)
		if got := scrape(); got != 1 || src.reads != 1 {
			t.Errorf("a scrape 9s later: %v after %d reads, want the last read's 1 and no new read", got, src.reads)
		}
		time.Sleep(2 * time.Second)
		if got := scrape(); got != 5 || src.reads != 2 {
			t.Errorf("a scrape 11s after the read: %v after %d reads, want 5 from a second read", got, src.reads)
		}
	})
}
