package idem_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/idem"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, etcdtest.LeakOptions()...) }

// agents is a real message.Agents: one instance's inbox and mailbox per
// agent, as the daemon keeps them, counting what it was given.
type agents struct {
	capacity  int
	delivered atomic.Int64
	durable   atomic.Bool // the agents are durable (message.Target.Durable)

	mu    sync.Mutex
	boxes map[string]*box
}

type box struct {
	in *inbox.Inbox
	mb *message.Mailbox
}

func (a *agents) Target(string) (message.Target, error) {
	return message.Target{Accepts: []string{"*"}, Durable: a.durable.Load()}, nil
}

func (a *agents) box(agent string) *box {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.boxes == nil {
		a.boxes = map[string]*box{}
	}
	b := a.boxes[agent]
	if b == nil {
		in := inbox.New(a.capacity)
		b = &box{in: in, mb: message.NewMailbox(in, nil)}
		a.boxes[agent] = b
	}
	return b
}

func (a *agents) Deliver(_ context.Context, m *message.Message) error {
	if err := a.box(m.Agent()).mb.Put(m); err != nil {
		return err
	}
	a.delivered.Add(1)
	return nil
}

// recv is the next message the agent's instance gets.
func (a *agents) recv(t *testing.T, agent string) (id, content string) {
	t.Helper()
	d := 5 * time.Second
	env, ok := a.box(agent).in.Recv(context.Background(), &d)
	if !ok {
		t.Fatal("no envelope")
	}
	msg, ok := env.Event.(inbox.Message)
	if !ok {
		t.Fatalf("envelope %s is a %T", env.ID, env.Event)
	}
	return env.ID, msg.Content
}

// host is one host of the test cluster: its member key, ledger and router.
type host struct {
	name   string
	lease  clientv3.LeaseID
	ledger *idem.Ledger
	router *message.Router
	agents *agents
}

// cluster is hosts sharing one etcd under a prefix of their own.
type cluster struct {
	tb     testing.TB
	cli    *clientv3.Client
	prefix string
	opts   idem.Options
}

func (c *cluster) host(name string, capacity int, member bool) *host {
	t := c.tb
	h := &host{name: name, agents: &agents{capacity: capacity}}
	if member {
		g, err := c.cli.Grant(context.Background(), 60)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.cli.Put(context.Background(), c.prefix+"/members/"+name, "{}", clientv3.WithLease(g.ID)); err != nil {
			t.Fatal(err)
		}
		h.lease = g.ID
	}
	o := c.opts
	o.Client, o.Prefix, o.Host, o.Log = c.cli, c.prefix, name, zaptest.NewLogger(t)
	h.ledger = idem.New(o)
	t.Cleanup(h.ledger.Close)
	h.router = message.NewRouter(h.agents, message.Options{Ledger: h.ledger})
	return h
}

// die ends the host's membership as a kill -9 does, once its lease expired.
func (c *cluster) die(h *host) {
	if _, err := c.cli.Revoke(context.Background(), h.lease); err != nil {
		c.tb.Fatal(err)
	}
}

func send(t *testing.T, h *host, key, content string) (*message.Message, bool, error) {
	t.Helper()
	return h.router.Send(context.Background(), message.Request{Agent: "a", Sender: "api", Content: content, IdempotencyKey: key})
}

func mustSend(t *testing.T, h *host, key, content string, wantExisting bool) *message.Message {
	t.Helper()
	m, existing, err := send(t, h, key, content)
	if err != nil {
		t.Fatalf("send on %s: %v", h.name, err)
	}
	if existing != wantExisting {
		t.Fatalf("send on %s: existing %v, want %v", h.name, existing, wantExisting)
	}
	return m
}

func waitDone(t *testing.T, m *message.Message) message.View {
	t.Helper()
	testenv.Recv(t, m.Done(), 5*time.Second, "message "+m.ID()+" ended")
	return m.View()
}

func flush(t *testing.T, h *host) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.router.Settle(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLedger: a key is delivered once across the hosts, whatever state
// its record is in when a retry comes, on the same host or another.
func TestLedger(t *testing.T) {
	e := etcdtest.Start(t, 1)
	cli := etcdtest.Client(t, e.Endpoints()...)
	for _, tc := range []struct {
		name string
		opts idem.Options
		run  func(t *testing.T, c *cluster)
	}{
		{name: "replied: a retry anywhere replays the reply", run: func(t *testing.T, c *cluster) {
			h1, h2 := c.host("h1", 0, true), c.host("h2", 0, true)
			m := mustSend(t, h1, "k", "hello", false)
			id, content := h1.agents.recv(t, "a")
			if err := h1.agents.box("a").mb.Delta(id, "hel"); err != nil {
				t.Fatal(err)
			}
			if err := h1.agents.box("a").mb.Reply(id, "lo "+content); err != nil {
				t.Fatal(err)
			}
			flush(t, h1)
			if r := mustSend(t, h1, "k", "hello", true); r != m {
				t.Errorf("retry on h1: message %s, want the first %s", r.ID(), m.ID())
			}
			r := mustSend(t, h2, "k", "hello", true)
			v := waitDone(t, r)
			if r.ID() != m.ID() || v.Status != message.StatusDone || v.Reply != "hello hello" {
				t.Errorf("retry on h2: %+v, want message %s done with the reply %q", v, m.ID(), "hello hello")
			}
			if got, ok := h2.router.Get("a", m.ID()); !ok || got != r {
				t.Errorf("h2 keeps the replayed message under its id: %v", ok)
			}
			if n := h2.agents.delivered.Load(); n != 0 {
				t.Errorf("h2 delivered %d messages", n)
			}
		}},
		{name: "failed: a retry replays the error", run: func(t *testing.T, c *cluster) {
			h1, h2 := c.host("h1", 0, true), c.host("h2", 0, true)
			mustSend(t, h1, "k", "x", false)
			id, _ := h1.agents.recv(t, "a")
			if err := h1.agents.box("a").mb.Fail(id, "no can do"); err != nil {
				t.Fatal(err)
			}
			flush(t, h1)
			v := waitDone(t, mustSend(t, h2, "k", "x", true))
			if v.Status != message.StatusFailed || v.Error == nil || *v.Error != (message.ErrorView{Code: message.CodeReplyError, Message: "no can do"}) {
				t.Errorf("retry on h2: %+v", v)
			}
		}},
		{name: "cancelled: a retry replays the cancel", run: func(t *testing.T, c *cluster) {
			h1, h2 := c.host("h1", 0, true), c.host("h2", 0, true)
			mustSend(t, h1, "k", "x", false).Cancel()
			flush(t, h1)
			if v := waitDone(t, mustSend(t, h2, "k", "x", true)); v.Status != message.StatusCancelled {
				t.Errorf("retry on h2: %+v", v)
			}
		}},
		{name: "in flight on a live host: that host answers it, another refuses naming it", run: func(t *testing.T, c *cluster) {
			h1, h2 := c.host("h1", 0, true), c.host("h2", 0, true)
			m := mustSend(t, h1, "k", "x", false)
			if r := mustSend(t, h1, "k", "x", true); r != m {
				t.Errorf("retry on h1: message %s, want %s", r.ID(), m.ID())
			}
			_, _, err := send(t, h2, "k", "x")
			if !errors.Is(err, message.ErrUnavailable) ||
				!strings.Contains(err.Error(), fmt.Sprintf(`message %s with this idempotency key is in flight on host "h1"`, m.ID())) {
				t.Errorf("retry on h2: %v", err)
			}
			if n := h1.agents.delivered.Load() + h2.agents.delivered.Load(); n != 1 {
				t.Errorf("%d deliveries, want 1", n)
			}
		}},
		{name: "in flight on a host that died: never delivered again, the outcome is unknown", run: func(t *testing.T, c *cluster) {
			h1, h2, h3 := c.host("h1", 0, true), c.host("h2", 0, true), c.host("h3", 0, true)
			m := mustSend(t, h1, "k", "x", false)
			c.die(h1)
			want := fmt.Sprintf("message %s was delivered to host \"h1\", which stopped before the reply completed; its outcome is unknown", m.ID())
			for _, h := range []*host{h2, h2, h3} {
				v := waitDone(t, mustSend(t, h, "k", "x", true))
				if v.ID != m.ID() || v.Status != message.StatusFailed || v.Error == nil || v.Error.Code != "unavailable" || v.Error.Message != want {
					t.Errorf("retry on %s: %+v, want failed: %s", h.name, v, want)
				}
			}
			if n := h2.agents.delivered.Load() + h3.agents.delivered.Load(); n != 0 {
				t.Errorf("delivered again %d times", n)
			}
		}},
		{name: "refused: the key is released, a retry delivers", run: func(t *testing.T, c *cluster) {
			h1, h2 := c.host("h1", 1, true), c.host("h2", 0, true)
			mustSend(t, h1, "fill", "x", false) // the inbox of one is full
			_, _, err := send(t, h1, "k", "x")
			if !errors.Is(err, message.ErrBusy) {
				t.Fatalf("send on a full h1: %v", err)
			}
			mustSend(t, h2, "k", "x", false)
			if n := h2.agents.delivered.Load(); n != 1 {
				t.Errorf("h2 delivered %d", n)
			}
			h1.agents.recv(t, "a") // h1 has room again, but h2 holds the key
			_, _, err = send(t, h1, "k", "x")
			if !errors.Is(err, message.ErrUnavailable) || !strings.Contains(err.Error(), `in flight on host "h2"`) {
				t.Errorf("retry on h1: %v", err)
			}
		}},
		{name: "a reply over the bound: replayed whole where it was delivered, an error elsewhere", opts: idem.Options{MaxReply: 4}, run: func(t *testing.T, c *cluster) {
			h1, h2 := c.host("h1", 0, true), c.host("h2", 0, true)
			mustSend(t, h1, "k", "x", false)
			id, _ := h1.agents.recv(t, "a")
			if err := h1.agents.box("a").mb.Reply(id, "a long reply"); err != nil {
				t.Fatal(err)
			}
			flush(t, h1)
			if v := waitDone(t, mustSend(t, h1, "k", "x", true)); v.Reply != "a long reply" {
				t.Errorf("retry on h1: %+v", v)
			}
			v := waitDone(t, mustSend(t, h2, "k", "x", true))
			if v.Status != message.StatusFailed || v.Error == nil || !strings.Contains(v.Error.Message, "reply of 12 bytes, over the 4 bytes") {
				t.Errorf("retry on h2: %+v", v)
			}
		}},
		{name: "concurrent sends of one key on two hosts: one delivery", run: func(t *testing.T, c *cluster) {
			hs := []*host{c.host("h1", 0, true), c.host("h2", 0, true)}
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() { _, _, _ = send(t, hs[i%2], "k", "x") })
			}
			wg.Wait()
			if n := hs[0].agents.delivered.Load() + hs[1].agents.delivered.Load(); n != 1 {
				t.Errorf("%d deliveries, want 1", n)
			}
		}},
		{name: "a host that is not a member refuses", run: func(t *testing.T, c *cluster) {
			h := c.host("h9", 0, false)
			_, _, err := send(t, h, "k", "x")
			if !errors.Is(err, message.ErrUnavailable) || !strings.Contains(err.Error(), "not a member") {
				t.Errorf("send: %v", err)
			}
			if n := h.agents.delivered.Load(); n != 0 {
				t.Errorf("delivered %d", n)
			}
		}},
		{name: "no key: no record, every send delivers", run: func(t *testing.T, c *cluster) {
			h := c.host("h1", 0, true)
			mustSend(t, h, "", "x", false)
			mustSend(t, h, "", "x", false)
			resp, err := c.cli.Get(context.Background(), c.prefix+"/idempotency/", clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil || resp.Count != 0 {
				t.Errorf("records: %v %v", resp, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &cluster{tb: t, cli: cli, prefix: "/" + strings.ReplaceAll(t.Name(), " ", "_"), opts: tc.opts}
			tc.run(t, c)
		})
	}
}

// TestLedgerTTL: a record stays while its message is open, longer than
// the TTL (its lease is renewed), and goes the TTL after the message
// ended: then the key delivers again.
func TestLedgerTTL(t *testing.T) {
	e := etcdtest.Start(t, 1)
	cli := etcdtest.Client(t, e.Endpoints()...)
	c := &cluster{tb: t, cli: cli, prefix: "/ttl", opts: idem.Options{TTL: 2 * time.Second}}
	h1, h2 := c.host("h1", 0, true), c.host("h2", 0, true)
	m := mustSend(t, h1, "k", "x", false)
	opened := time.Now()
	// Open for twice the TTL, the key stays with m.
	err := testenv.Poll(10*time.Second, func() bool {
		_, _, err := send(t, h2, "k", "x")
		if !errors.Is(err, message.ErrUnavailable) {
			t.Fatalf("retry on h2 %v after the send: %v", time.Since(opened), err)
		}
		return time.Since(opened) > 4*time.Second
	})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := h1.agents.recv(t, "a")
	if err := h1.agents.box("a").mb.Reply(id, "done"); err != nil {
		t.Fatal(err)
	}
	flush(t, h1)
	ended := time.Now()
	if v := waitDone(t, mustSend(t, h2, "k", "x", true)); v.ID != m.ID() || v.Reply != "done" {
		t.Errorf("retry on h2 after the end: %+v", v)
	}
	// h2 keeps the replay for its own retention; a third host asks etcd.
	h3 := c.host("h3", 0, true)
	testenv.Eventually(t, 10*time.Second, "the record to go after the TTL", func() bool {
		resp, err := cli.Get(context.Background(), "/ttl/idempotency/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count == 0
	})
	if gone := time.Since(ended); gone < 2*time.Second {
		t.Errorf("the record went %v after the end, before the TTL", gone)
	}
	mustSend(t, h3, "k", "x", false)
}

// TestLedgerUnreachable: with etcd out of reach a message with a key is
// refused unavailable within the timeout, and not delivered; one without
// a key is delivered as ever.
func TestLedgerUnreachable(t *testing.T) {
	e := etcdtest.Start(t, 1)
	proxy := etcdtest.NewProxy(t, e.Endpoint(0))
	cli := etcdtest.Client(t, proxy.URL())
	c := &cluster{tb: t, cli: cli, prefix: "/cut", opts: idem.Options{Timeout: time.Second}}
	h := c.host("h1", 0, true)
	mustSend(t, h, "k1", "x", false)
	proxy.Cut()
	start := time.Now()
	_, _, err := send(t, h, "k2", "x")
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("refused after %v, want about the timeout of 1s", took)
	}
	if !errors.Is(err, message.ErrUnavailable) || tooling.AsError(err).Code != tooling.CodeUnavailable {
		t.Errorf("send with etcd cut off: %v", err)
	}
	if n := h.agents.delivered.Load(); n != 1 {
		t.Errorf("%d delivered, want the first only", n)
	}
	mustSend(t, h, "", "no key", false)
	proxy.Restore()
}
