package idem

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// claim is a record this host created (message.Claim).
type claim struct {
	l     *Ledger
	key   string
	lease clientv3.LeaseID // the record's
	rev   int64            // the record's mod revision, as claimed

	mu       sync.Mutex
	rec      record
	renewed  time.Time
	ended    bool // End or Release called
	released bool
	writing  bool // a write of the end or release is under way
}

// Release implements message.Claim: the record is deleted before it
// returns, or, when etcd does not answer, by the loop.
func (c *claim) Release() {
	if !c.finish(nil) {
		return
	}
	c.l.write(c)
}

// End implements message.Claim: the outcome is written in the background
// (Flush waits for it).
func (c *claim) End(ev message.Event) {
	if !c.finish(&ev) {
		return
	}
	c.l.bg.goWrite(func() { c.l.write(c) })
}

// finish records the end (nil: the release) once, moving c from the open
// claims to the pending writes.
func (c *claim) finish(ev *message.Event) bool {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return false
	}
	c.ended = true
	if ev == nil {
		c.released = true
	} else {
		c.rec.State, c.rec.Ended, c.rec.Outcome = stateEnded, time.Now(), c.l.bounded(*ev)
	}
	c.mu.Unlock()
	c.l.mu.Lock()
	delete(c.l.open, c)
	c.l.pending[c] = true
	c.l.mu.Unlock()
	return true
}

// bounded is the outcome a record keeps: ev, unless its reply text is over
// MaxReply (then an error saying so).
func (l *Ledger) bounded(ev message.Event) *message.Event {
	ev.Seq = 0
	if ev.Kind == message.KindReply && len(ev.Text) > l.o.MaxReply {
		ev = message.Event{Kind: message.KindError, Code: tooling.CodeUnavailable.String(),
			Text: fmt.Sprintf("the message was answered with a reply of %d bytes, over the %d bytes the idempotency ledger keeps: only the host that delivered it can replay it", len(ev.Text), l.o.MaxReply)}
	}
	return &ev
}

// write records c's end or release, if its record is still the one c
// claimed; on an etcd error it stays pending for the loop. One write of c
// runs at a time.
func (l *Ledger) write(c *claim) {
	c.mu.Lock()
	if c.writing {
		c.mu.Unlock()
		return
	}
	c.writing = true
	released, rec := c.released, c.rec
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.writing = false
		c.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(l.cli.Ctx(), l.o.Timeout)
	defer cancel()
	op := clientv3.OpDelete(c.key)
	if !released {
		val, err := json.Marshal(rec)
		if err != nil {
			l.log.Error("idempotency record", zap.String("message_id", rec.Message), zap.Error(err))
			l.settled(c)
			return
		}
		op = clientv3.OpPut(c.key, string(val), clientv3.WithIgnoreLease())
	}
	resp, err := l.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(c.key), "=", c.rev)).Then(op).Commit()
	if err != nil {
		l.log.Warn("idempotency record not written; retrying", zap.String("message_id", rec.Message), zap.Error(err))
		return
	}
	switch {
	case !resp.Succeeded:
		l.log.Info("idempotency record changed by another host; not written", zap.String("message_id", rec.Message))
	case released: // the lease may hold other records: it expires
	default:
		_, _ = l.cli.KeepAliveOnce(ctx, c.lease) // the retention from the end
	}
	l.settled(c)
}

// loop renews the open claims' leases (every TTL/3) and retries the
// pending writes (every second), until Close or the client's end.
func (l *Ledger) loop() {
	defer close(l.bg.done)
	t := time.NewTicker(min(time.Second, l.o.TTL/3))
	defer t.Stop()
	for {
		select {
		case <-l.bg.quit:
			return
		case <-l.cli.Ctx().Done():
			return
		case <-t.C:
		}
		now := time.Now()
		var renew, retry []*claim
		l.mu.Lock()
		for c := range l.open {
			renew = append(renew, c)
		}
		for c := range l.pending {
			retry = append(retry, c)
		}
		l.mu.Unlock()
		due := map[clientv3.LeaseID][]*claim{} // claims share leases
		for _, c := range renew {
			c.mu.Lock()
			if now.Sub(c.renewed) >= l.o.TTL/3 && !c.ended {
				due[c.lease] = append(due[c.lease], c)
			}
			c.mu.Unlock()
		}
		for lease, cs := range due {
			l.renew(lease, cs, now)
		}
		for _, c := range retry {
			l.write(c)
		}
	}
}

// renew renews a lease of open claims: their records stay while their
// messages are open, however long.
func (l *Ledger) renew(lease clientv3.LeaseID, cs []*claim, now time.Time) {
	ctx, cancel := context.WithTimeout(l.cli.Ctx(), l.o.Timeout)
	defer cancel()
	if _, err := l.cli.KeepAliveOnce(ctx, lease); err != nil {
		l.log.Warn("idempotency records' lease not renewed", zap.Int("open_messages", len(cs)), zap.Error(err))
		return
	}
	for _, c := range cs {
		c.mu.Lock()
		c.renewed = now
		c.mu.Unlock()
	}
}
