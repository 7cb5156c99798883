package cluster

// The lease's renewal and the fencing deadline. concurrency.Session's
// keep-alive is not used here: its Done channel closes only at the
// lease's expiry as computed from the last answer, too late to stop the
// agents before another host may claim them.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// renew renews lease every TTL/5 and returns an error (ErrLeaseLost) once
// no renewal sent in the last TTL/2 was answered, or etcd says the lease is
// gone; nil when ctx ends. okSince is when the grant was sent: both the
// fencing deadline and the renewal schedule count from it, so a join whose
// grant and registration took longer than TTL/5 renews at once instead of
// waiting a period the deadline does not have.
func (n *Node) renew(ctx context.Context, lease clientv3.LeaseID, okSince time.Time) error {
	ttl := n.o.LeaseTTL
	every, fenceAfter := ttl/renewDiv, ttl/fenceDiv
	lastOK := okSince
	next := okSince.Add(every)
	for {
		fenceAt := lastOK.Add(fenceAfter)
		if !time.Now().Before(fenceAt) {
			return fmt.Errorf("%w: no renewal answered for %s", ErrLeaseLost, time.Since(lastOK).Round(time.Millisecond))
		}
		if wait := min(time.Until(next), time.Until(fenceAt)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
		if !time.Now().Before(fenceAt) {
			continue
		}
		sent := time.Now()
		next = sent.Add(every)
		// The request may take until the fencing deadline, not longer.
		rctx, cancel := context.WithDeadline(ctx, fenceAt)
		resp, err := n.cli.KeepAliveOnce(rctx, lease)
		cancel()
		n.count()
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil && resp.TTL > 0:
			lastOK = sent
			n.mu.Lock()
			n.lastOK = sent
			n.counts.Renewed++
			n.mu.Unlock()
		case errors.Is(err, rpctypes.ErrLeaseNotFound) || (err == nil && resp.TTL <= 0):
			return fmt.Errorf("%w: etcd says the lease is gone", ErrLeaseLost)
		default:
			n.log.Warn("lease renewal failed", zap.Error(err), zap.Duration("fence_in", time.Until(fenceAt).Round(time.Millisecond)))
		}
	}
}
