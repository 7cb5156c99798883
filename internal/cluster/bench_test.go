package cluster_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/cluster"
	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// converged reports whether every agent runs exactly once, on the host
// placement picks among members.
func converged(w *world, agents, members []string) bool {
	where := w.where()
	for _, a := range agents {
		hs := where[a]
		if len(hs) != 1 || hs[0] != cluster.Place(a, members) {
			return false
		}
	}
	return true
}

// requests sums the etcd requests of hosts.
func requests(hosts []*host) int64 {
	var n int64
	for _, h := range hosts {
		n += h.node.Status().Requests
	}
	return n
}

// BenchmarkConverge: 10,000 agents over 10 in-process hosts on one
// embedded etcd member. It reports the time to converge (every agent
// running once, where placement puts it) after an 11th host joins and
// after it leaves again (a graceful leave), and the etcd requests of all
// hosts per moved agent during the join. Moves are not paced here
// (moves_per_second 100000): the figures are etcd's and the nodes' cost.
// Run: go test -run '^$' -bench Converge -benchtime 1x ./internal/cluster/
func BenchmarkConverge(b *testing.B) {
	nAgents, nHosts := 10000, 10
	if testing.Short() {
		nAgents = 1000
	}
	for b.Loop() {
		e := etcdtest.Start(b, 1)
		cli := etcdtest.Client(b, e.Endpoints()...)
		w := newWorld()
		agents := agentNames(nAgents)
		var hosts []*host
		var members []string
		fast := func(o *cluster.Options) {
			o.MovesPerSecond, o.Settle, o.LeaseTTL = 100000, 500*time.Millisecond, 10*time.Second
		}
		for i := range nHosts {
			name := fmt.Sprintf("h%02d", i)
			hosts = append(hosts, startHost(b, w, cli, name, agents, fast))
			members = append(members, name)
		}
		start := time.Now()
		testenv.Eventually(b, 5*time.Minute, "initial placement", func() bool { return converged(w, agents, members) })
		for _, h := range hosts {
			if f := h.node.Status().Counts.Fences; f > 0 {
				b.Fatalf("host %s fenced %d times", h.name, f)
			}
		}
		initial := time.Since(start)

		before := requests(hosts)
		_, mark := w.eventsSince(0)
		joined := time.Now()
		extra := startHost(b, w, cli, "h10", agents, fast)
		all := append(append([]string(nil), members...), "h10")
		testenv.Eventually(b, 5*time.Minute, "convergence after a join", func() bool { return converged(w, agents, all) })
		join := time.Since(joined) - 500*time.Millisecond // the settle time is not the cost
		evs, _ := w.eventsSince(mark)
		moved := len(evs) / 2
		perMove := float64(requests(append(hosts, extra))-before) / float64(max(moved, 1))

		left := time.Now()
		extra.stopNow()
		testenv.Eventually(b, 5*time.Minute, "convergence after a leave", func() bool { return converged(w, agents, members) })
		leave := time.Since(left)

		b.ReportMetric(initial.Seconds(), "initial_s")
		b.ReportMetric(join.Seconds(), "join_s")
		b.ReportMetric(leave.Seconds(), "leave_s")
		b.ReportMetric(float64(moved), "moves")
		b.ReportMetric(perMove, "etcd_req/move")
		for _, h := range hosts {
			h.stopNow()
		}
		if len(w.overlaps) > 0 {
			b.Fatalf("%d overlaps, first: %s", len(w.overlaps), w.overlaps[0])
		}
	}
}
