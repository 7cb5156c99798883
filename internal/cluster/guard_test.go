package cluster_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestWriteGuard: a write under a node's WriteGuard succeeds only on the
// host that holds the agent: on the other host it fails, and on the
// holder once it left (its key deleted, its lease revoked), while the
// agent's new holder's succeeds.
func TestWriteGuard(t *testing.T) {
	e := etcdtest.Start(t, 1)
	cli := etcdtest.Client(t, e.Endpoints()...)
	w := newWorld()
	a := startHost(t, w, cli, "a", []string{"x"})
	testenv.Eventually(t, 15*time.Second, "x on a", func() bool { return a.node.Owns("x") })
	b := startHost(t, w, cli, "b", []string{"x"})
	testenv.Eventually(t, 15*time.Second, "b joined", func() bool { return b.node.Ready() })
	// x may move to b once b counts for placement: wait until both hosts
	// count and x is where placement puts it, so that no hand-off is under
	// way (when neither holds it) as the guards are taken.
	settled := func(h *host) bool {
		ms := h.node.Status().Members
		for _, m := range ms {
			if !m.Settled {
				return false
			}
		}
		return len(ms) == 2
	}
	testenv.Eventually(t, 15*time.Second, "x held where placement puts it", func() bool {
		place := a.node.Place("x")
		if !settled(a) || !settled(b) || place == "" || place != b.node.Place("x") {
			return false
		}
		holder := map[string]*host{"a": a, "b": b}[place]
		return holder != nil && holder.node.Owns("x") && a.node.Owns("x") != b.node.Owns("x")
	})

	write := func(guard []clientv3.Cmp) bool {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := cli.Txn(ctx).If(guard...).Then(clientv3.OpPut("/guarded", "v")).Commit()
		if err != nil {
			t.Fatal(err)
		}
		return resp.Succeeded
	}
	holder := func() (*host, *host) { // the holder of x and the other host
		if a.node.Owns("x") {
			return a, b
		}
		return b, a
	}
	h, other := holder()
	if !write(h.node.WriteGuard("x")) {
		t.Errorf("a write guarded by x's holder %s failed", h.name)
	}
	if write(other.node.WriteGuard("x")) {
		t.Errorf("a write guarded by %s, which does not hold x, succeeded", other.name)
	}
	if write(h.node.WriteGuard("y")) {
		t.Error("a write guarded by an agent nobody holds succeeded")
	}
	if write(h.node.WriteGuard("x/s1")) {
		t.Error("a write guarded by a session nobody holds succeeded")
	}

	guard := h.node.WriteGuard("x") // as a cut-off host's committer still has it
	h.stopNow()
	if write(guard) {
		t.Errorf("a write guarded by %s after it left succeeded", h.name)
	}
	if write(h.node.WriteGuard("x")) {
		t.Errorf("a write guarded by %s between sessions succeeded", h.name)
	}
	testenv.Eventually(t, 15*time.Second, "x on "+other.name, func() bool { return other.node.Owns("x") })
	if !write(other.node.WriteGuard("x")) {
		t.Errorf("a write guarded by x's new holder %s failed", other.name)
	}
}
