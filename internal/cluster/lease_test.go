package cluster_test

import (
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/cluster"
	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestJoinThroughLatency: a host whose path to etcd adds 0.25 s each way
// (a grant and a registration take a second, a third of the lease TTL)
// joins and stays joined for several TTLs without fencing. Issue 33: the
// first renewal was due lease_ttl/5 after the join, past the fencing
// deadline counted from the grant, and such a host joined and fenced
// over and over.
func TestJoinThroughLatency(t *testing.T) {
	const ttl, latency = 3 * time.Second, 250 * time.Millisecond
	e := etcdtest.Start(t, 1)
	p := etcdtest.NewProxy(t, e.Endpoint(0), etcdtest.Latency(latency, latency))
	cli := etcdtest.Client(t, p.URL())
	w := newWorld()
	agents := agentNames(3)
	h := startHost(t, w, cli, "a", agents, func(o *cluster.Options) { o.LeaseTTL = ttl })
	testenv.Eventually(t, 4*ttl, "a joined with every agent", func() bool {
		return h.node.Status().Joined && w.exactlyOnce(agents)
	})
	joined := h.node.Status()
	// Several TTLs in which nothing may happen: a fence ends the wait early.
	err := testenv.Poll(3*ttl, func() bool {
		st := h.node.Status()
		return st.Counts.Fences > 0 || st.Lease != joined.Lease
	})
	st := h.node.Status()
	if err == nil || st.Counts.Fences != 0 || st.Lease != joined.Lease {
		t.Fatalf("fenced or rejoined within %s of joining: %d fences, lease %x then %x", 3*ttl, st.Counts.Fences, joined.Lease, st.Lease)
	}
	// Renewals kept coming, every ttl/5 or a round trip, whichever is longer.
	if n := st.Counts.Renewed - joined.Counts.Renewed; n < 9 {
		t.Errorf("%d renewals answered in %s, want at least 9", n, 3*ttl)
	}
	if !w.exactlyOnce(agents) {
		t.Errorf("agents not running once each after %s", 3*ttl)
	}
	w.checkNoOverlap(t)
}
