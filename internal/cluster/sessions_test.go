package cluster_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/cluster"
	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestSessionKeys: a session's key is created by one host only; every
// host sees who holds it; two instances under one key keep it until the
// last one ends; placement spreads sessions and every host agrees on it;
// a claim does not wait for another session's; a lazy agent is claimed
// only once wanted; the lookups name the members' addresses and close
// Gone when a member leaves.
func TestSessionKeys(t *testing.T) {
	e := etcdtest.Start(t, 1)
	cli := etcdtest.Client(t, e.Endpoints()...)
	w := newWorld()
	addr := func(name string) nodeOpt {
		return func(o *cluster.Options) { o.Address = "http://" + name + ".test:7070" }
	}
	lazy := func(o *cluster.Options) {
		o.Placement = func() cluster.Placement {
			return cluster.Placement{Agents: []string{"lazy"}, Lazy: []string{"lazy"}, Digest: "d1"}
		}
	}
	a := startHost(t, w, cli, "a", []string{"lazy"}, addr("a"), lazy)
	b := startHost(t, w, cli, "b", []string{"lazy"}, addr("b"), lazy)
	testenv.Eventually(t, 10*time.Second, "both settled", func() bool {
		return a.node.PlaceSession("chat", "x") != "" && b.node.PlaceSession("chat", "x") != "" &&
			len(a.node.Status().Members) == 2 && a.node.Status().Members[1].Settled && b.node.Status().Members[0].Settled
	})
	if got := a.node.Address("b"); got != "http://b.test:7070" {
		t.Errorf("a's address of b: %q", got)
	}

	// Placement: both hosts agree, and sessions spread.
	count := map[string]int{}
	for i := range 40 {
		s := fmt.Sprintf("s%d", i)
		pa, pb := a.node.PlaceSession("chat", s), b.node.PlaceSession("chat", s)
		if pa != pb {
			t.Fatalf("session %s placed on %s by a, on %s by b", s, pa, pb)
		}
		count[pa]++
	}
	if count["a"] < 8 || count["b"] < 8 {
		t.Errorf("40 sessions placed %v, want both hosts to get some", count)
	}

	// One key, one holder; the session name may hold a slash.
	const s = "team/room 1"
	ctx := t.Context()
	if err := a.node.ClaimSession(ctx, "chat", s); err != nil {
		t.Fatal(err)
	}
	if err := b.node.ClaimSession(ctx, "chat", s); !errors.Is(err, cluster.ErrSessionHeld) {
		t.Fatalf("b claimed a's session: %v", err)
	}
	testenv.Eventually(t, 5*time.Second, "b seeing a hold the session", func() bool {
		h, ok := b.node.SessionOwner("chat", s)
		return ok && h == "a"
	})
	if h, ok := a.node.SessionOwner("chat", s); !ok || h != "a" {
		t.Errorf("a's view of its own session: %q %v", h, ok)
	}
	// A second instance under the key (one ending, one new): the key stays
	// until the last ends.
	if err := a.node.ClaimSession(ctx, "chat", s); err != nil {
		t.Fatal(err)
	}
	a.node.ReleaseSession("chat", s)
	if _, ok := a.node.SessionOwner("chat", s); !ok {
		t.Fatal("the key went with one of two instances")
	}
	a.node.ReleaseSession("chat", s)
	testenv.Eventually(t, 5*time.Second, "the key gone for both", func() bool {
		_, oka := a.node.SessionOwner("chat", s)
		_, okb := b.node.SessionOwner("chat", s)
		return !oka && !okb
	})
	if err := b.node.ClaimSession(ctx, "chat", s); err != nil {
		t.Fatalf("b claims the released session: %v", err)
	}

	// A claim waits only for its own session's claims and releases: one
	// of another session (its lock held, as in an etcd round trip) does
	// not hold it up; the locks go once released.
	unlock := a.node.LockSession("chat", "busy")
	claimed := make(chan error, 1)
	go func() { claimed <- a.node.ClaimSession(ctx, "chat", "other") }()
	if err := testenv.Recv(t, claimed, 10*time.Second, "a claim while another session's lock is held"); err != nil {
		t.Fatal(err)
	}
	a.node.ReleaseSession("chat", "other")
	unlock()
	if n := a.node.SessionLocks(); n != 0 {
		t.Errorf("%d session locks left after every claim and release ended", n)
	}

	// A lazy agent: nobody holds it until its placed host is asked.
	time.Sleep(300 * time.Millisecond) // passes that could claim it, and must not
	if _, held := a.node.Owner("lazy"); held || len(w.where()["lazy"]) != 0 {
		t.Fatalf("lazy held before any message: %v", w.where())
	}
	placed := map[string]*host{"a": a, "b": b}[a.node.Place("lazy")]
	placed.node.Want("lazy")
	testenv.Eventually(t, 5*time.Second, "lazy running on its placed host", func() bool {
		hs := w.where()["lazy"]
		return len(hs) == 1 && hs[0] == placed.name
	})

	// Gone closes when a member leaves.
	gone := a.node.Gone("b")
	select {
	case <-gone:
		t.Fatal("b gone while it is a member")
	default:
	}
	b.stopNow()
	testenv.Recv(t, gone, 5*time.Second, "b gone")
	w.checkNoOverlap(t)
}
