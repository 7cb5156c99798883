package cluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/toolhostd/toolhostd/internal/cluster"
	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
)

func TestMain(m *testing.M) {
	etcdtest.MemberMain() // an etcd member process of etcdtest.StartProcs: never returns
	goleak.VerifyTestMain(m, etcdtest.LeakOptions()...)
}

// testTTL is the lease TTL of the tests: the shortest allowed.
const testTTL = 2 * time.Second

// host is one running node.
type host struct {
	name string
	node *cluster.Node
	stop context.CancelFunc
	done chan struct{}
}

// stopNow ends the node (a graceful leave) and waits.
func (h *host) stopNow() {
	h.stop()
	<-h.done
}

type nodeOpt func(*cluster.Options)

// startHost runs a node named name for agents on cli, with the world's
// runner; it stops when the test ends.
func startHost(t testing.TB, w *world, cli *clientv3.Client, name string, agents []string, opts ...nodeOpt) *host {
	t.Helper()
	log := zap.NewNop() // benchmarks: no log
	if tt, ok := t.(*testing.T); ok {
		log = zaptest.NewLogger(tt).Named(name)
	}
	o := cluster.Options{
		Client: cli, Runner: w.runner(name), Log: log,
		Name: name, Prefix: "/test", LeaseTTL: testTTL, Settle: 200 * time.Millisecond,
		MovesPerSecond: 1000,
		Placement:      func() cluster.Placement { return cluster.Placement{Agents: agents, Digest: "d1"} },
	}
	for _, f := range opts {
		f(&o)
	}
	n, err := cluster.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &host{name: name, node: n, stop: cancel, done: make(chan struct{})}
	go func() { defer close(h.done); _ = n.Run(ctx) }()
	var once sync.Once
	t.Cleanup(func() { once.Do(h.stopNow) })
	return h
}
