package cluster_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolhostd/toolhostd/internal/cluster"
	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestEveryAgentRunsOnce: three hosts share 300 agents, each running on
// exactly one host, about a third each.
func TestEveryAgentRunsOnce(t *testing.T) {
	e := etcdtest.Start(t, 1)
	cli := etcdtest.Client(t, e.Endpoints()...)
	w := newWorld()
	agents := agentNames(300)
	hosts := []*host{
		startHost(t, w, cli, "a", agents),
		startHost(t, w, cli, "b", agents),
		startHost(t, w, cli, "c", agents),
	}
	// Converged: every agent on the host placement over all three gives it
	// (exactly once on some host is not enough: while the hosts still
	// disagree on who is settled, an agent can run once on a host it will
	// then move from, as a loaded CI machine showed).
	members := []string{"a", "b", "c"}
	testenv.Eventually(t, 15*time.Second, "every agent on exactly one host, the one placement gives it", func() bool {
		where := w.where()
		for _, a := range agents {
			if hs := where[a]; len(hs) != 1 || hs[0] != cluster.Place(a, members) {
				return false
			}
		}
		return true
	})
	testenv.Eventually(t, 10*time.Second, "every host ready", func() bool {
		for _, h := range hosts {
			if !h.node.Ready() {
				return false
			}
		}
		return true
	})
	// Settled: after a while nothing moved any more and the share is fair
	// (the window is the check: no event announces a move that does not
	// come).
	_, mark := w.eventsSince(0)
	time.Sleep(time.Second)
	if evs, _ := w.eventsSince(mark); len(evs) != 0 {
		t.Errorf("%d starts and stops after convergence, want none", len(evs))
	}
	for _, h := range hosts {
		if n := w.onHost(h.name); n < 70 || n > 130 {
			t.Errorf("host %s runs %d agents, want about 100", h.name, n)
		}
		st := h.node.Status()
		if len(st.Members) != 3 || !st.Joined {
			t.Errorf("host %s: status %+v", h.name, st)
		}
	}
	w.checkNoOverlap(t)
}

// TestJoinTakesFairSharePaced: a third host joins two: it ends with about
// a third of the agents, each moved agent stopped before it started again,
// and the owners hand them over at no more than moves_per_second.
func TestJoinTakesFairSharePaced(t *testing.T) {
	const rate = 20.0
	e := etcdtest.Start(t, 1)
	cli := etcdtest.Client(t, e.Endpoints()...)
	w := newWorld()
	agents := agentNames(240)
	paced := func(o *cluster.Options) { o.MovesPerSecond = rate }
	a := startHost(t, w, cli, "a", agents, paced)
	b := startHost(t, w, cli, "b", agents, paced)
	testenv.Eventually(t, 15*time.Second, "240 agents on a and b", func() bool { return w.exactlyOnce(agents) })
	w.waitQuiet(t, 500*time.Millisecond) // a and b started together: their own moves first
	_, mark := w.eventsSince(0)
	movesBefore := a.node.Status().Counts.Moves + b.node.Status().Counts.Moves
	joined := time.Now()
	c := startHost(t, w, cli, "c", agents, paced)
	testenv.Eventually(t, 20*time.Second, "c has its share and every agent runs once", func() bool {
		return w.onHost("c") >= 60 && w.exactlyOnce(agents) && c.node.Ready()
	})
	took := time.Since(joined)
	evs, _ := w.eventsSince(mark)
	// Moves: stops on a and b, each followed by the start on c.
	stops := map[string][]time.Time{}
	stoppedAt := map[string]time.Time{}
	for _, ev := range evs {
		switch {
		case !ev.start && ev.host != "c":
			stops[ev.host] = append(stops[ev.host], ev.at)
			stoppedAt[ev.agent] = ev.at
		case ev.start && ev.host == "c":
			at, ok := stoppedAt[ev.agent]
			if !ok || at.After(ev.at) {
				t.Errorf("%s started on c before it stopped elsewhere", ev.agent)
			}
		case ev.start:
			t.Errorf("%s started on %s: only c gains agents", ev.agent, ev.host)
		}
	}
	moved := len(stoppedAt)
	if n := w.onHost("c"); n != moved || n < 60 || n > 100 {
		t.Errorf("c runs %d agents after %d moves, want them equal and about 80", n, moved)
	}
	// Pacing: per owner, the k-th stop no sooner than (k-burst)/rate
	// after its first.
	burst := int(rate)
	for h, ts := range stops {
		for k, at := range ts {
			if min := time.Duration(float64(k-burst) / rate * float64(time.Second)); k > burst && at.Sub(ts[0]) < min-50*time.Millisecond {
				t.Errorf("host %s: stop %d came %s after its first, paced at %v/s it needs %s", h, k, at.Sub(ts[0]), rate, min)
				break
			}
		}
	}
	t.Logf("c took %d agents (a %d, b %d) in %s", moved, w.onHost("a"), w.onHost("b"), took.Round(time.Millisecond))
	if n := a.node.Status().Counts.Moves + b.node.Status().Counts.Moves - movesBefore; n != uint64(moved) {
		t.Errorf("a and b counted %d moves since c joined, want %d", n, moved)
	}
	w.checkNoOverlap(t)
}

// TestLeaveHandsOver: a host that stops gracefully leaves; the others run
// its agents at once (no lease expiry to wait for).
func TestLeaveHandsOver(t *testing.T) {
	e := etcdtest.Start(t, 1)
	cli := etcdtest.Client(t, e.Endpoints()...)
	w := newWorld()
	agents := agentNames(90)
	startHost(t, w, cli, "a", agents)
	b := startHost(t, w, cli, "b", agents)
	testenv.Eventually(t, 15*time.Second, "agents on a and b", func() bool { return w.exactlyOnce(agents) && w.onHost("b") > 0 })
	left := time.Now()
	b.stopNow()
	if n := w.onHost("b"); n != 0 {
		t.Fatalf("b left with %d agents running", n)
	}
	testenv.Eventually(t, testTTL, "every agent on a", func() bool { return w.onHost("a") == len(agents) })
	t.Logf("a runs every agent %s after b left", time.Since(left).Round(time.Millisecond))
	w.checkNoOverlap(t)
}

// TestFlappingMemberGetsNothing: a member that keeps leaving and coming
// back within the settle time gets no agent, and no agent moves.
func TestFlappingMemberGetsNothing(t *testing.T) {
	e := etcdtest.Start(t, 1)
	cli := etcdtest.Client(t, e.Endpoints()...)
	w := newWorld()
	agents := agentNames(60)
	settle := func(o *cluster.Options) { o.Settle = 1500 * time.Millisecond }
	startHost(t, w, cli, "a", agents, settle)
	testenv.Eventually(t, 15*time.Second, "agents on a", func() bool { return w.onHost("a") == len(agents) })
	_, mark := w.eventsSince(0)
	for range 4 {
		// The flapping is the scenario: up for less than the settle
		// time, down briefly, again.
		f := startHost(t, w, cli, "flapper", agents, settle)
		time.Sleep(700 * time.Millisecond)
		f.stopNow()
		time.Sleep(100 * time.Millisecond)
	}
	if evs, _ := w.eventsSince(mark); len(evs) != 0 {
		t.Errorf("%d starts and stops while a member flapped, want none (first: %+v)", len(evs), evs[0])
	}
}

// TestFenceWhenCutOff: a host cut off from etcd stops all its agents; the
// other host starts them only after the cut-off host's lease can have
// expired, never while they still run; when etcd is back the host rejoins
// and gets its share again.
func TestFenceWhenCutOff(t *testing.T) {
	e := etcdtest.Start(t, 1)
	proxy := etcdtest.NewProxy(t, e.Endpoint(0))
	w := newWorld()
	w.stopWait = 100 * time.Millisecond // each stop takes a grace
	agents := agentNames(60)
	a := startHost(t, w, etcdtest.Client(t, e.Endpoints()...), "a", agents)
	b := startHost(t, w, etcdtest.Client(t, proxy.URL()), "b", agents)
	testenv.Eventually(t, 15*time.Second, "agents on a and b", func() bool { return w.exactlyOnce(agents) && w.onHost("b") > 0 })
	w.waitQuiet(t, 500*time.Millisecond)
	mine := b.node.Status().Owned
	_, mark := w.eventsSince(0)
	lastRenew := b.node.Status().LastRenew
	proxy.Cut()
	testenv.Eventually(t, 3*testTTL, "b's agents on a", func() bool { return w.onHost("a") == len(agents) })
	evs, _ := w.eventsSince(mark)
	stopped := map[string]time.Time{}
	var lastStop time.Time
	for _, ev := range evs {
		switch {
		case !ev.start && ev.host == "b":
			stopped[ev.agent] = ev.at
			lastStop = ev.at
		case ev.start && ev.host == "a":
			at, ok := stopped[ev.agent]
			if !ok || !at.Before(ev.at) {
				t.Errorf("%s started on a before b stopped it; events: %+v", ev.agent, w.history(ev.agent))
			}
		}
	}
	if len(stopped) != len(mine) {
		t.Errorf("b stopped %d agents, it held %d", len(stopped), len(mine))
	}
	// b's lease cannot expire before its last answered renewal + TTL: b
	// must be done by then, with the margin.
	st := b.node.Status()
	if st.LastRenew.After(lastRenew) {
		lastRenew = st.LastRenew
	}
	if limit := lastRenew.Add(testTTL * 3 / 4); lastStop.After(limit.Add(100 * time.Millisecond)) {
		t.Errorf("b's last stop %s after its last renewal, want by %s", lastStop.Sub(lastRenew), testTTL*3/4)
	}
	if st.Counts.Fences == 0 {
		t.Error("b counted no fence")
	}
	t.Logf("b fenced %d agents, the last %s after its last renewal; a ran them all %s after it",
		len(stopped), lastStop.Sub(lastRenew).Round(time.Millisecond), time.Since(lastRenew).Round(time.Millisecond))
	proxy.Restore()
	testenv.Eventually(t, 20*time.Second, "b back with a share", func() bool { return w.onHost("b") > 0 && w.exactlyOnce(agents) })
	_ = a
	w.checkNoOverlap(t)
}

// TestOneEtcdMemberOfThreeLost: with three etcd members, losing one moves
// nothing and fences nobody; losing all fences every host; when the
// members come back the agents run again.
func TestOneEtcdMemberOfThreeLost(t *testing.T) {
	e := etcdtest.Start(t, 3)
	w := newWorld()
	agents := agentNames(60)
	a := startHost(t, w, etcdtest.Client(t, e.Endpoints()...), "a", agents)
	b := startHost(t, w, etcdtest.Client(t, e.Endpoints()...), "b", agents)
	testenv.Eventually(t, 15*time.Second, "agents on a and b", func() bool { return w.exactlyOnce(agents) && w.onHost("b") > 0 })
	w.waitQuiet(t, 500*time.Millisecond)
	_, mark := w.eventsSince(0)
	e.Stop(0)
	time.Sleep(2 * testTTL) // the window is the check: two TTLs without a fence
	if evs, _ := w.eventsSince(mark); len(evs) != 0 {
		t.Errorf("%d starts and stops after one etcd member of three stopped, want none", len(evs))
	}
	if f := a.node.Status().Counts.Fences + b.node.Status().Counts.Fences; f != 0 {
		t.Errorf("%d fences after one etcd member of three stopped, want none", f)
	}
	// Quorum lost: each host must have stopped its agents within 3/4 of
	// the TTL of its last answered renewal (the package doc's schedule).
	_, mark = w.eventsSince(0)
	stopped := make(chan struct{})
	go func() { e.Stop(2); close(stopped) }()
	e.Stop(1)
	testenv.Eventually(t, 2*testTTL, "every host fenced", func() bool { return w.onHost("a")+w.onHost("b") == 0 })
	<-stopped // its ports are free again
	evs, _ := w.eventsSince(mark)
	for _, h := range []*host{a, b} {
		renewed := h.node.Status().LastRenew
		for _, ev := range evs {
			if ev.host == h.name && ev.at.Sub(renewed) > testTTL*3/4+100*time.Millisecond {
				t.Errorf("host %s stopped %s %s after its last renewal, want within %s", h.name, ev.agent, ev.at.Sub(renewed), testTTL*3/4)
			}
		}
	}
	errs := make(chan error, 3)
	for i := range 3 {
		go func() { errs <- e.Restart(i) }()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 30*time.Second, "agents back", func() bool { return w.exactlyOnce(agents) })
	w.checkNoOverlap(t)
}

// TestNameTaken: a second host with a live member's name does not join.
func TestNameTaken(t *testing.T) {
	e := etcdtest.Start(t, 1)
	cli := etcdtest.Client(t, e.Endpoints()...)
	w := newWorld()
	agents := agentNames(10)
	startHost(t, w, cli, "a", agents)
	testenv.Eventually(t, 10*time.Second, "agents on a", func() bool { return w.onHost("a") == 10 })
	w2 := newWorld()
	core, logs := observer.New(zap.WarnLevel)
	dup := startHost(t, w2, cli, "a", agents, func(o *cluster.Options) { o.Log = zap.New(core) })
	testenv.Eventually(t, 10*time.Second, "the second \"a\" refused twice", func() bool {
		n := 0
		for _, e := range logs.FilterMessage("cluster session ended; joining again").All() {
			if err, _ := e.ContextMap()["error"].(string); strings.Contains(err, cluster.ErrNameTaken.Error()) {
				n++
			}
		}
		return n >= 2
	})
	if n := len(w2.where()); n != 0 || dup.node.Status().Joined {
		t.Errorf("the second \"a\" runs %d agents (joined %v), want none", n, dup.node.Status().Joined)
	}
}

// TestRemovedAgentAndVanishedKey: an agent no longer configured is
// stopped and its key dropped; an agent whose key is deleted behind the
// owner's back is stopped (and claimed again, as it still belongs there).
func TestRemovedAgentAndVanishedKey(t *testing.T) {
	e := etcdtest.Start(t, 1)
	cli := etcdtest.Client(t, e.Endpoints()...)
	w := newWorld()
	agents := agentNames(5)
	var placed atomic.Pointer[[]string]
	placed.Store(&agents)
	a := startHost(t, w, cli, "a", agents, func(o *cluster.Options) {
		o.Placement = func() cluster.Placement { return cluster.Placement{Agents: *placed.Load(), Digest: "d1"} }
	})
	testenv.Eventually(t, 10*time.Second, "agents on a", func() bool { return w.onHost("a") == 5 })
	rest := agents[1:]
	placed.Store(&rest) // as a reload removing agent-000
	a.node.Refresh()
	testenv.Eventually(t, 5*time.Second, "agent-000 stopped and its key gone", func() bool {
		r, err := cli.Get(context.Background(), "/test/agents/agent-000")
		return err == nil && len(r.Kvs) == 0 && len(w.where()["agent-000"]) == 0
	})
	_, mark := w.eventsSince(0)
	if _, err := cli.Delete(context.Background(), "/test/agents/agent-001"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "agent-001 stopped and started again", func() bool {
		evs, _ := w.eventsSince(mark)
		return len(evs) == 2 && !evs[0].start && evs[1].start && evs[1].agent == "agent-001"
	})
	if n := a.node.Status().Counts.Lost; n != 1 {
		t.Errorf("lost %d, want 1", n)
	}
}

// TestNewChecksOptions: bad options are refused.
func TestNewChecksOptions(t *testing.T) {
	e := etcdtest.Start(t, 1)
	cli := etcdtest.Client(t, e.Endpoints()...)
	w := newWorld()
	for name, o := range map[string]cluster.Options{
		"no client": {Runner: w.runner("a"), Name: "a", LeaseTTL: testTTL, MovesPerSecond: 1},
		"no name":   {Client: cli, Runner: w.runner("a"), LeaseTTL: testTTL, MovesPerSecond: 1},
		"ttl":       {Client: cli, Runner: w.runner("a"), Name: "a", LeaseTTL: 1500 * time.Millisecond, MovesPerSecond: 1},
		"rate":      {Client: cli, Runner: w.runner("a"), Name: "a", LeaseTTL: testTTL},
	} {
		if _, err := cluster.New(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestFenceHaltsFirst: when the runner's Stop is held up (the daemon's
// Stop waits behind a reload), a fence still stops every agent in time
// through the runner's Halt.
func TestFenceHaltsFirst(t *testing.T) {
	e := etcdtest.Start(t, 1)
	proxy := etcdtest.NewProxy(t, e.Endpoint(0))
	w := newWorld()
	agents := agentNames(20)
	hr := &haltRunner{runner: w.runner("b")}
	b := startHost(t, w, etcdtest.Client(t, proxy.URL()), "b", agents, func(o *cluster.Options) { o.Runner = hr })
	testenv.Eventually(t, 10*time.Second, "agents on b", func() bool { return w.onHost("b") == len(agents) })
	hr.setDelay(3 * testTTL) // far past the lease
	_, mark := w.eventsSince(0)
	proxy.Cut()
	testenv.Eventually(t, testTTL, "b halted", func() bool { return w.onHost("b") == 0 })
	renewed := b.node.Status().LastRenew
	evs, _ := w.eventsSince(mark)
	for _, ev := range evs {
		if d := ev.at.Sub(renewed); d > testTTL*3/4 {
			t.Errorf("%s stopped %s after b's last renewal, want within %s", ev.agent, d, testTTL*3/4)
		}
	}
	if n := hr.halted1(); n != 1 {
		t.Errorf("%d halts, want 1", n)
	}
}

// TestFenceOverrun: a fence whose stops do not finish by 9/10 of the TTL
// after the last renewal calls Overrun (serve exits there).
func TestFenceOverrun(t *testing.T) {
	e := etcdtest.Start(t, 1)
	proxy := etcdtest.NewProxy(t, e.Endpoint(0))
	w := newWorld()
	overran := make(chan time.Time, 1)
	b := startHost(t, w, etcdtest.Client(t, proxy.URL()), "b", agentNames(3), func(o *cluster.Options) {
		o.Overrun = func() { overran <- time.Now() }
	})
	testenv.Eventually(t, 10*time.Second, "agents on b", func() bool { return w.onHost("b") == 3 })
	w.mu.Lock()
	w.stopWait = 2 * testTTL // a Stop that takes longer than the lease
	w.mu.Unlock()
	proxy.Cut()
	select {
	case at := <-overran:
		renewed := b.node.Status().LastRenew
		if d := at.Sub(renewed); d < testTTL*9/10-50*time.Millisecond || d > testTTL {
			t.Errorf("overrun %s after the last renewal, want at %s", d, testTTL*9/10)
		}
	case <-time.After(3 * testTTL):
		t.Fatal("no overrun")
	}
}
