package cluster

// Placement applied: claim what belongs here and is free, hand over (paced)
// what belongs elsewhere, drop what is no longer configured, stop what was
// taken away behind this host's back.

import (
	"context"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// reconcileEvery is the longest pause between two passes (watch events and
// config changes wake the loop sooner, but no sooner than passGap after
// the last pass: a storm of events makes passes, not a busy loop).
const (
	reconcileEvery = 250 * time.Millisecond
	passGap        = 50 * time.Millisecond
)

// reconcile runs passes until ctx ends, then waits for the hand overs it
// started.
func (n *Node) reconcile(ctx context.Context, lease clientv3.LeaseID) {
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(min(reconcileEvery, max(n.o.Settle/4, 20*time.Millisecond)))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.pace.wake:
		case <-t.C:
		}
		n.pass(ctx, lease, &wg)
		sleep(ctx, passGap)
	}
}

// plan is what one pass does.
type plan struct {
	claims, moves, drops, deletes, lost []string
}

// settledLocked lists the members that count for placement now.
func (n *Node) settledLocked(now time.Time) []string {
	var out []string
	for name, m := range n.view.members {
		if now.Sub(m.since) >= n.o.Settle {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// planLocked computes a pass from the view.
func (n *Node) planLocked(now time.Time, lease clientv3.LeaseID) plan {
	var p plan
	targets := n.place.targetsFor(n.settledLocked(now))
	for a := range n.place.agents {
		target := targets[a]
		la := n.held.agents[a]
		switch {
		case la == nil:
			if _, held := n.view.owners[a]; target == n.o.Name && !held && (!n.place.lazy[a] || n.place.wanted[a]) {
				p.claims = append(p.claims, a)
			}
		case la.stopped:
			p.deletes = append(p.deletes, a)
		case la.releasing:
		case n.view.rev >= la.rev && n.view.owners[a].lease != lease:
			p.lost = append(p.lost, a)
		case target != "" && target != n.o.Name:
			p.moves = append(p.moves, a)
		}
	}
	for a, la := range n.held.agents {
		if n.place.agents[a] {
			continue
		}
		switch {
		case la.stopped:
			p.deletes = append(p.deletes, a)
		case !la.releasing:
			p.drops = append(p.drops, a)
		}
	}
	for _, s := range [][]string{p.claims, p.moves, p.drops, p.deletes, p.lost} {
		slices.Sort(s)
	}
	return p
}

// pass is one round of placement.
func (n *Node) pass(ctx context.Context, lease clientv3.LeaseID, wg *sync.WaitGroup) {
	now := time.Now()
	n.mu.Lock()
	if !n.view.synced || n.lease.fencing {
		n.mu.Unlock()
		return
	}
	p := n.planLocked(now, lease)
	if slices.Contains(n.settledLocked(now), n.o.Name) {
		n.lease.passed = true
	}
	n.mu.Unlock()

	for _, a := range p.lost {
		n.log.Error("an agent's ownership key vanished while this host held it; stopping the agent", zap.String("agent", a))
		n.mu.Lock()
		n.stats.counts.Lost++
		n.mu.Unlock()
		n.release(wg, a, lease, false)
	}
	for _, a := range p.drops {
		n.release(wg, a, lease, false)
	}
	for _, a := range p.moves {
		if !n.pace.moves.Allow() {
			n.poke() // the rest at a later pass
			break
		}
		n.release(wg, a, lease, true)
	}
	for _, a := range p.deletes {
		if !n.deleteKey(ctx, a, lease, false) {
			break
		}
	}
	for _, a := range p.claims {
		if !n.claim(ctx, a, lease) {
			break
		}
	}
}

// claim creates a's key if absent, on lease, and starts a. It returns
// false when etcd did not answer (the pass stops there).
func (n *Node) claim(ctx context.Context, a string, lease clientv3.LeaseID) bool {
	resp, err := n.createKey(ctx, n.agentKey(a), lease)
	if err != nil {
		n.log.Debug("claim", zap.String("agent", a), zap.Error(err))
		return false
	}
	if !resp.Succeeded {
		return true // someone else's: the watch will say whose
	}
	// A fence that began meanwhile must not miss this start: fence waits
	// for startMu before it stops everything.
	n.startMu.Lock()
	defer n.startMu.Unlock()
	n.mu.Lock()
	fencing := n.lease.fencing || n.lease.id != lease
	la := &localAgent{rev: resp.Header.Revision, starting: true}
	if !fencing {
		n.held.agents[a] = la
		n.stats.counts.Claims++
		delete(n.place.wanted, a)
	}
	n.mu.Unlock()
	if fencing {
		return false
	}
	n.log.Debug("claimed", zap.String("agent", a))
	n.o.Runner.Start(a)
	n.mu.Lock()
	la.starting = false
	n.wait.notify()
	n.mu.Unlock()
	return true
}

// release stops a in the background, then deletes its key (move: a hand
// over to another member, counted).
func (n *Node) release(wg *sync.WaitGroup, a string, lease clientv3.LeaseID, move bool) {
	n.mu.Lock()
	la := n.held.agents[a]
	if la == nil || la.releasing {
		n.mu.Unlock()
		return
	}
	la.releasing, la.move = true, move
	n.wait.notify()
	n.mu.Unlock()
	wg.Go(func() {
		n.o.Runner.Stop(a)
		n.mu.Lock()
		la.stopped = true
		n.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), n.o.LeaseTTL/requestDiv)
		defer cancel()
		n.deleteKey(ctx, a, lease, true)
	})
}

// deleteKey deletes a's key if it is still on lease, once a was stopped.
// It returns false when etcd did not answer (a later pass tries again).
func (n *Node) deleteKey(ctx context.Context, a string, lease clientv3.LeaseID, first bool) bool {
	if err := n.deleteOnLease(ctx, n.agentKey(a), lease); err != nil {
		if first {
			n.log.Debug("drop an ownership key; trying again", zap.String("agent", a), zap.Error(err))
		}
		return false
	}
	n.mu.Lock()
	if la := n.held.agents[a]; la != nil && la.stopped {
		delete(n.held.agents, a)
		if la.move {
			n.stats.counts.Moves++
		}
		n.wait.notify()
	}
	n.mu.Unlock()
	n.poke()
	return true
}

// createKey creates an ownership key with this host's value on lease if
// the key is absent (resp.Succeeded).
func (n *Node) createKey(ctx context.Context, key string, lease clientv3.LeaseID) (*clientv3.TxnResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, n.o.LeaseTTL/requestDiv)
	defer cancel()
	defer n.count()
	return n.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, n.ownerValue(), clientv3.WithLease(lease))).
		Commit()
}

// deleteOnLease deletes key if it is still attached to lease.
func (n *Node) deleteOnLease(ctx context.Context, key string, lease clientv3.LeaseID) error {
	ctx, cancel := context.WithTimeout(ctx, n.o.LeaseTTL/requestDiv)
	defer cancel()
	defer n.count()
	_, err := n.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.LeaseValue(key), "=", lease)).
		Then(clientv3.OpDelete(key)).
		Commit()
	return err
}

// ownerValue is the value of this host's ownership keys.
func (n *Node) ownerValue() string { return `{"host":` + jsonString(n.o.Name) + `}` }
