package idem_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// answer replies to every message the agent's instance gets, until ctx
// ends: the instance of the benchmarks.
func (a *agents) answer(ctx context.Context, agent string) {
	b := a.box(agent)
	for {
		env, ok := b.in.Recv(ctx, nil)
		if !ok {
			return
		}
		if _, ok := env.Event.(inbox.Message); ok {
			_ = b.mb.Reply(env.ID, "ok")
		}
	}
}

// BenchmarkKeyedSend is a message with a new idempotency key sent and
// answered: on one host (baseline: the key in its table), and in a
// cluster (the key claimed in etcd, an embedded member on loopback, and
// its outcome written); then a retry of an ended key on another host,
// replayed from etcd.
func BenchmarkKeyedSend(b *testing.B) {
	e := etcdtest.Start(b, 1)
	cli := etcdtest.Client(b, e.Endpoints()...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	send := func(r *message.Router, key string) error {
		m, _, err := r.Send(ctx, message.Request{Agent: "a", Sender: "api", Content: "x", IdempotencyKey: key})
		if err != nil {
			return err
		}
		select {
		case <-m.Done():
		case <-time.After(10 * time.Second):
			return fmt.Errorf("message %s not answered", m.ID())
		}
		return nil
	}
	local := &agents{}
	go local.answer(ctx, "a")
	b.Run("baseline", func(b *testing.B) {
		r := message.NewRouter(local, message.Options{})
		n := 0
		testenv.Latencies(b, func() error { n++; return send(r, fmt.Sprint("k", n)) })
	})
	c := &cluster{tb: b, cli: cli, prefix: "/bench"}
	h1, h2 := c.host("h1", 0, true), c.host("h2", 0, true)
	go h1.agents.answer(ctx, "a")
	b.Run("ledger", func(b *testing.B) {
		n := 0
		testenv.Latencies(b, func() error { n++; return send(h1.router, fmt.Sprint("k", n)) })
	})
	b.Run("ledger-replay", func(b *testing.B) {
		if err := send(h1.router, "replayed"); err != nil {
			b.Fatal(err)
		}
		if err := h1.router.Settle(ctx); err != nil {
			b.Fatal(err)
		}
		testenv.Latencies(b, func() error { return send(h2.router, "replayed") })
	})
}
