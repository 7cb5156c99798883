package idem_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/message"
)

// resume opens again on h the message id of key, as a durable agent's
// next host does after the host that accepted it died, and gives it to
// h's instance, which answers it with reply.
func resume(t *testing.T, h *host, id, key, content, reply string) *message.Message {
	t.Helper()
	m, fresh, err := h.router.Resume(message.Request{ID: id, Agent: "a", Sender: "api", Content: content, IdempotencyKey: key}, trace.SpanContext{})
	if err != nil || !fresh {
		t.Fatalf("resume on %s: fresh %v, %v", h.name, fresh, err)
	}
	if err := h.agents.box("a").mb.Resume(m, true); err != nil {
		t.Fatal(err)
	}
	got, _ := h.agents.recv(t, "a")
	if got != id {
		t.Fatalf("%s's instance got message %s, want %s", h.name, got, id)
	}
	if reply != "" {
		if err := h.agents.box("a").mb.Reply(id, reply); err != nil {
			t.Fatal(err)
		}
		flush(t, h)
	}
	return m
}

// TestLedgerResume: a durable agent's next host claims again the key of a
// message it resumes, so that a retry, on any host, gets the resumed
// message's reply rather than the unknown outcome; a key whose record it
// must not take is left as it is.
func TestLedgerResume(t *testing.T) {
	e := etcdtest.Start(t, 1)
	cli := etcdtest.Client(t, e.Endpoints()...)
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, c *cluster)
	}{
		{name: "its host died in flight: claimed again, a retry anywhere gets the reply", run: func(t *testing.T, c *cluster) {
			h1, h2, h3 := c.host("h1", 0, true), c.host("h2", 0, true), c.host("h3", 0, true)
			m := mustSend(t, h1, "k", "x", false)
			c.die(h1)
			r := resume(t, h2, m.ID(), "k", "x", "")
			if got := mustSend(t, h2, "k", "x", true); got != r {
				t.Errorf("retry on h2 while open: message %p, want the resumed %p", got, r)
			}
			_, _, err := send(t, h3, "k", "x")
			if !errors.Is(err, message.ErrUnavailable) || !strings.Contains(err.Error(), `in flight on host "h2"`) {
				t.Errorf("retry on h3 while open: %v, want in flight on h2", err)
			}
			if err := h2.agents.box("a").mb.Reply(m.ID(), "done x"); err != nil {
				t.Fatal(err)
			}
			flush(t, h2)
			v := waitDone(t, mustSend(t, h3, "k", "x", true))
			if v.ID != m.ID() || v.Status != message.StatusDone || v.Reply != "done x" {
				t.Errorf("retry on h3 after the end: %+v, want message %s done with %q", v, m.ID(), "done x")
			}
		}},
		{name: "settled as lost by a retry first: claimed again, the next retry gets the reply", run: func(t *testing.T, c *cluster) {
			h1, h2, h3 := c.host("h1", 0, true), c.host("h2", 0, true), c.host("h3", 0, true)
			m := mustSend(t, h1, "k", "x", false)
			c.die(h1)
			if v := waitDone(t, mustSend(t, h3, "k", "x", true)); v.Status != message.StatusFailed {
				t.Fatalf("retry before the resume: %+v, want the unknown outcome", v)
			}
			resume(t, h2, m.ID(), "k", "x", "late x")
			h4 := c.host("h4", 0, true) // h3 keeps the replayed loss
			v := waitDone(t, mustSend(t, h4, "k", "x", true))
			if v.Status != message.StatusDone || v.Reply != "late x" {
				t.Errorf("retry on h4 after the resumed reply: %+v", v)
			}
		}},
		{name: "a durable agent's: a retry before the resume is told to retry later, then gets the reply", run: func(t *testing.T, c *cluster) {
			h1, h2, h3 := c.host("h1", 0, true), c.host("h2", 0, true), c.host("h3", 0, true)
			for _, h := range []*host{h1, h2, h3} {
				h.agents.durable.Store(true)
			}
			m := mustSend(t, h1, "k", "x", false)
			c.die(h1)
			_, _, err := send(t, h3, "k", "x")
			if want := `was on host "h1", which stopped; the durable agent's next host resumes it: retry later`; !errors.Is(err, message.ErrUnavailable) || err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("retry before the resume: %v, want ...%s", err, want)
			}
			resume(t, h2, m.ID(), "k", "x", "late x")
			v := waitDone(t, mustSend(t, h3, "k", "x", true))
			if v.ID != m.ID() || v.Status != message.StatusDone || v.Reply != "late x" {
				t.Errorf("retry on h3 after the resumed reply: %+v, want message %s done with %q", v, m.ID(), "late x")
			}
		}},
		{name: "ended with its outcome: left, a retry gets that outcome", run: func(t *testing.T, c *cluster) {
			h1, h2, h3 := c.host("h1", 0, true), c.host("h2", 0, true), c.host("h3", 0, true)
			m := mustSend(t, h1, "k", "x", false)
			id, _ := h1.agents.recv(t, "a")
			if err := h1.agents.box("a").mb.Reply(id, "first"); err != nil {
				t.Fatal(err)
			}
			flush(t, h1)
			c.die(h1)
			resume(t, h2, m.ID(), "k", "x", "second")
			if v := waitDone(t, mustSend(t, h3, "k", "x", true)); v.Reply != "first" {
				t.Errorf("retry on h3: %+v, want the recorded reply %q", v, "first")
			}
		}},
		{name: "another message holds the key: left", run: func(t *testing.T, c *cluster) {
			h1, h2, h3 := c.host("h1", 0, true), c.host("h2", 0, true), c.host("h3", 0, true)
			m := mustSend(t, h1, "k", "x", false)
			resume(t, h2, "other-id", "k", "x", "other")
			_, _, err := send(t, h3, "k", "x")
			if want := fmt.Sprintf(`message %s with this idempotency key is in flight on host "h1"`, m.ID()); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("retry on h3: %v, want %s", err, want)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &cluster{tb: t, cli: cli, prefix: "/" + strings.ReplaceAll(t.Name(), " ", "_")}
			tc.run(t, c)
		})
	}
}
