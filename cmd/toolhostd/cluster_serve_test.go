package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// sampler polls every host's /v1/agents and records, per agent, whether it
// was ever seen running on two hosts in one sample round.
type sampler struct {
	mu      sync.Mutex
	hosts   map[string]*clusterHost
	last    map[string][]string // agent -> hosts running it, last round
	doubles []string
	stop    context.CancelFunc
	done    chan struct{}
}

func newSampler(hosts map[string]*clusterHost) *sampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sampler{hosts: hosts, stop: cancel, done: make(chan struct{}), last: map[string][]string{}}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			s.round(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *sampler) round(ctx context.Context) {
	s.mu.Lock()
	hosts := make([]*clusterHost, 0, len(s.hosts))
	for _, h := range s.hosts {
		hosts = append(hosts, h)
	}
	s.mu.Unlock()
	// The hosts are asked at once, so that a round is close to one instant:
	// asked one after another, a round on a loaded machine spans long
	// enough for an agent to move between two answers and show twice.
	type answer struct {
		host  string
		at    time.Time
		took  time.Duration
		list  []control.AgentStatus
		asked bool
	}
	answers := make([]answer, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			t0 := time.Now()
			list, err := h.ctl.Agents(rctx)
			answers[i] = answer{host: h.name, at: t0, took: time.Since(t0), list: list, asked: err == nil} // a killed host runs nothing
		})
	}
	wg.Wait()
	seen := map[string][]string{}
	detail := map[string][]string{}
	for _, an := range answers {
		if !an.asked {
			continue
		}
		for _, a := range an.list {
			if a.State == "running" || a.State == "stopping" {
				seen[a.Name] = append(seen[a.Name], an.host)
				detail[a.Name] = append(detail[a.Name], fmt.Sprintf("%s:%s@%s+%s", an.host, a.State, an.at.Format("05.000"), an.took.Round(time.Millisecond)))
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for a, hs := range seen {
		if len(hs) > 1 {
			s.doubles = append(s.doubles, fmt.Sprintf("%s on %v %v", a, hs, detail[a]))
		}
	}
	s.last = seen
}

func (s *sampler) remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.hosts, name)
}

func (s *sampler) add(h *clusterHost) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hosts[h.name] = h
}

// placement is the last round's agent -> hosts.
func (s *sampler) placement() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// onEach counts the agents running on each host in the last round, and
// reports whether all n run exactly once.
func (s *sampler) onEach(n int) (map[string]int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	count := map[string]int{}
	once := 0
	for _, hs := range s.last {
		live := 0
		for _, h := range hs {
			if s.hosts[h] != nil { // a removed host's last answer is stale
				count[h]++
				live++
			}
		}
		if live == 1 {
			once++
		}
	}
	return count, once == n
}

// settle waits until the placement did not change for d (at most 60s).
func (s *sampler) settle(t *testing.T, d time.Duration) {
	t.Helper()
	last, since := fmt.Sprint(s.placement()), time.Now()
	testenv.Eventually(t, 60*time.Second, fmt.Sprintf("the placement to stay the same for %v", d), func() bool {
		if cur := fmt.Sprint(s.placement()); cur != last {
			last, since = cur, time.Now()
		}
		return time.Since(since) >= d
	})
}

func (s *sampler) finish(t *testing.T) {
	t.Helper()
	s.stop()
	<-s.done
	for _, d := range s.doubles {
		t.Error("running twice:", d)
	}
}

// TestClusterServe runs three `toolhostd serve` processes as one cluster
// on an embedded etcd member, with 300 real agents (QuickJS probes
// waiting in recv): each runs on exactly one host; kill -9 of a host moves
// its agents to the others within lease_ttl + 5s; a host added takes
// about a third; a host
// cut off from etcd (a TCP proxy) fences and the others take its agents.
// No agent is ever seen running on two hosts in one sample.
func TestClusterServe(t *testing.T) {
	const n = 300
	const ttl = 3 * time.Second
	noConfig(t)
	e := etcdtest.Start(t, 1)
	probe := testenv.Agent(t, "test-agents-qjs", "probe")
	input, err := json.Marshal(map[string]any{"steps": []map[string]any{{"op": "recv"}}})
	if err != nil {
		t.Fatal(err)
	}
	var agents strings.Builder
	for i := range n {
		fmt.Fprintf(&agents, "[agent.p%03d]\ncomponent = %q\ninput = %q\nstop_grace = \"2s\"\n", i, probe, input)
	}
	dir := shortTempDir(t, "i18cs")
	start := func(name string, endpoints []string) *clusterHost {
		t.Helper()
		return startClusterHost(t, dir, name, ttl, endpoints, agents.String())
	}
	proxy := etcdtest.NewProxy(t, e.Endpoint(0))
	hosts := map[string]*clusterHost{
		"a": start("a", e.Endpoints()),
		"b": start("b", e.Endpoints()),
		"c": start("c", []string{proxy.URL()}),
	}
	s := newSampler(map[string]*clusterHost{"a": hosts["a"], "b": hosts["b"], "c": hosts["c"]})
	defer s.finish(t)
	waitFor(t, 120*time.Second, func() bool { _, ok := s.onEach(n); return ok }, hosts["a"].proc.out)
	s.settle(t, 2*time.Second) // the cold start's own moves first
	count, _ := s.onEach(n)
	t.Logf("placed: %v", count)
	for h, k := range count {
		if k < 70 || k > 130 {
			t.Errorf("host %s runs %d agents, want about 100", h, k)
		}
	}

	// (Losing one etcd member of three, and all of them, is
	// TestOneEtcdMemberOfThreeLost in internal/cluster: three embedded
	// members leave peer connections behind for a while, which this
	// package's leak check would report.)
	s.settle(t, 2*time.Second)

	// kill -9 of b: its agents run on a and c within lease_ttl + 5s.
	killed := time.Now()
	if err := hosts["b"].proc.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-hosts["b"].proc.exited
	s.remove("b")
	waitFor(t, ttl+5*time.Second, func() bool { _, ok := s.onEach(n); return ok }, hosts["a"].proc.out)
	failover := time.Since(killed)
	count, _ = s.onEach(n)
	t.Logf("kill -9 of b: every agent running again after %s: %v", failover.Round(time.Millisecond), count)

	// d joins: it takes about a third, paced.
	joined := time.Now()
	hosts["d"] = start("d", e.Endpoints())
	s.add(hosts["d"])
	waitFor(t, 60*time.Second, func() bool {
		count, ok := s.onEach(n)
		return ok && count["d"] >= 70
	}, hosts["d"].proc.out)
	count, _ = s.onEach(n)
	t.Logf("d joined: %v after %s", count, time.Since(joined).Round(time.Millisecond))
	if count["d"] > 130 {
		t.Errorf("d took %d agents, want about 100", count["d"])
	}

	// c cut off from etcd: it fences; a and d run its agents.
	cut := time.Now()
	proxy.Cut()
	waitFor(t, 30*time.Second, func() bool {
		count, ok := s.onEach(n)
		return ok && count["c"] == 0
	}, hosts["c"].proc.out)
	t.Logf("c cut off: every agent on a and d after %s", time.Since(cut).Round(time.Millisecond))
	if out := hosts["c"].proc.out.String(); !strings.Contains(out, "fencing") {
		t.Errorf("c logged no fence:\n%s", tail(out, 4000))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
