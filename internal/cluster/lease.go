package cluster

// The lease: connecting before the grant, renewal, the fencing deadline
// and the fence. concurrency.Session's
// keep-alive is not used here: its Done channel closes only at the
// lease's expiry as computed from the last answer, too late to stop the
// agents before another host may claim them.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/connectivity"
)

// renew renews lease every TTL/10 and returns an error (ErrLeaseLost) once
// no renewal sent in the last TTL/2 was answered, or etcd says the lease is
// gone; nil when ctx ends. okSince is when the grant was sent: both the
// fencing deadline and the renewal schedule count from it, so a join whose
// grant and registration took longer than TTL/10 renews at once instead of
// waiting a period the deadline does not have.
//
// Renewals do not wait for each other: one that hangs (an etcd follower
// forwards renewals to the leader and, during an election, waits for one
// in steps of the election timeout) does not hold back the next, which
// goes to another member (the client balances new streams over them), and
// a failed one is retried after TTL/20. Any answered renewal counts with
// the time it was sent.
func (n *Node) renew(ctx context.Context, lease clientv3.LeaseID, okSince time.Time) error {
	ttl := n.o.LeaseTTL
	every, fenceAfter := ttl/renewDiv, ttl/fenceDiv
	lastOK := okSince
	next := okSince.Add(every)
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	answers := make(chan renewal)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		fenceAt := lastOK.Add(fenceAfter)
		now := time.Now()
		if !now.Before(fenceAt) {
			return fmt.Errorf("%w: no renewal answered for %s", ErrLeaseLost, now.Sub(lastOK).Round(time.Millisecond))
		}
		if !now.Before(next) {
			next = now.Add(every)
			wg.Go(func() {
				r := n.renewOnce(rctx, lease, now, now.Add(fenceAfter))
				select {
				case answers <- r:
				case <-rctx.Done():
				}
			})
		}
		t.Reset(earliest(next, fenceAt).Sub(now))
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case r := <-answers:
			switch {
			case ctx.Err() != nil:
				return nil
			case r.err == nil && r.ttl > 0:
				n.mu.Lock()
				n.stats.counts.Renewed++
				if r.sent.After(lastOK) {
					lastOK = r.sent
					n.lease.lastOK = r.sent
				}
				n.mu.Unlock()
			case errors.Is(r.err, rpctypes.ErrLeaseNotFound) || (r.err == nil && r.ttl <= 0):
				return fmt.Errorf("%w: etcd says the lease is gone", ErrLeaseLost)
			case errors.Is(r.err, context.DeadlineExceeded):
				// Answered too late to count: a later renewal may still.
			default:
				n.log.Warn("lease renewal failed", zap.Error(r.err), zap.Duration("fence_in", time.Until(fenceAt).Round(time.Millisecond)))
				next = earliest(next, time.Now().Add(ttl/retryDiv))
			}
		}
	}
}

// renewal is one renewal's outcome.
type renewal struct {
	sent time.Time
	ttl  int64
	err  error
}

// renewOnce sends one renewal at sent; it may take until deadline, after
// which its answer could not move the fencing deadline any more.
func (n *Node) renewOnce(ctx context.Context, lease clientv3.LeaseID, sent, deadline time.Time) renewal {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	resp, err := n.cli.KeepAliveOnce(ctx, lease)
	n.count()
	r := renewal{sent: sent, err: err}
	if err == nil {
		r.ttl = resp.TTL
	}
	return r
}

// earliest is the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// connected waits until the client has a connection to an etcd member (a
// few seconds at most), so that the grant's sending, from which the lease
// is counted, is not taken before a connection (up to a few round trips)
// was made.
func (n *Node) connected(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, n.o.LeaseTTL)
	defer cancel()
	conn := n.cli.ActiveConnection()
	for {
		st := conn.GetState()
		if st == connectivity.Ready {
			return nil
		}
		conn.Connect()
		if !conn.WaitForStateChange(ctx, st) {
			return fmt.Errorf("connect to etcd: %w (%s)", ctx.Err(), st)
		}
	}
}

// revoke drops a lease (and with it every key on it), best effort.
func (n *Node) revoke(lease clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), n.o.LeaseTTL/requestDiv)
	defer cancel()
	if _, err := n.cli.Revoke(ctx, lease); err != nil {
		n.log.Debug("revoke the lease", zap.Int64("lease", int64(lease)), zap.Error(err))
	}
	n.count()
}

// fence stops every agent at once, before the lease can have expired.
func (n *Node) fence(why error) {
	n.mu.Lock()
	n.lease.fencing = true
	n.stats.counts.Fences++
	n.wait.notify()
	deadline := n.lease.lastOK.Add(n.o.LeaseTTL * overrunNum / overrunDen)
	held := len(n.held.agents)
	n.mu.Unlock()
	// A barrier: a claim between its answer and its Start finishes first
	// (fencing is set, so no later one starts).
	n.startMu.Lock()
	n.startMu.Unlock() //lint:ignore SA2001 the empty section is the barrier
	n.log.Error("fencing: the lease could not be renewed; stopping every agent before it can expire",
		zap.Error(why), zap.Int("agents", held), zap.Time("expires_not_before", n.lease.lastOK.Add(n.o.LeaseTTL)))
	// stopped closes once no agent runs: after Halt for a Halter (Stop
	// then only cleans up), else after every Stop.
	stopped, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		if h, ok := n.o.Runner.(Halter); ok {
			h.Halt()
			close(stopped)
			n.stopAll()
			return
		}
		n.stopAll()
		close(stopped)
	}()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-stopped:
		n.log.Warn("fenced: every agent stopped", zap.Int("agents", held))
	case <-t.C:
		n.log.Error("fence overran: agents still stopping close to the lease's expiry")
		if n.o.Overrun != nil {
			n.o.Overrun()
		}
	}
	<-done
}
