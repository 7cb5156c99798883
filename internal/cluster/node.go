package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// Runner starts and stops agents by name; the daemon is one.
type Runner interface {
	// Start starts the agent and returns without waiting for it to run.
	// It is called only while this host holds the agent's key.
	Start(name string)
	// Stop stops the agent and returns once it no longer runs, within
	// StopBudget of the lease TTL (see the package doc). It is a no-op for
	// an agent that does not run.
	Stop(name string)
	// State is the agent's state as the control API reports it
	// ("running", "backoff", ...), "" for an agent it does not know.
	State(name string) string
	// Started reports whether the agent's first instance since Start was
	// started (or could not be: its state says why).
	Started(name string) bool
}

// Halter is a Runner that can stop every agent at once, bypassing
// whatever serialises its Stop, and refuse starts until Resume: a fence
// calls Halt first, then Stop for each agent; a new session calls Resume
// before it claims anything.
type Halter interface {
	Halt()
	Resume()
}

// SessionLister is a Runner that runs per-session instances of some
// agents: each member publishes them (session -> state) with its member
// key, for the cluster's view.
type SessionLister interface {
	Sessions(name string) map[string]string
}

// Options configure a Node.
type Options struct {
	Client *clientv3.Client
	Runner Runner
	Log    *zap.Logger

	Name           string        // this member's name
	Prefix         string        // key prefix, no trailing /
	LeaseTTL       time.Duration // whole seconds, at least 2s
	Settle         time.Duration // see the package doc
	MovesPerSecond float64       // > 0
	// Placement is what the node places and publishes: read at New and
	// at each Refresh (after a reload); nil: nothing.
	Placement func() Placement
	// Address is the URL the other hosts reach this host's control API
	// at, published in the member key ("" : none, messages cannot be
	// forwarded here).
	Address string

	// Overrun is called when a fence did not finish in time (see the
	// package doc); nil: logged only.
	Overrun func()
}

// DialOptions are the grpc options of a cluster host's etcd client: a
// reconnection backoff of at most 2s (grpc's default grows to 2 minutes),
// so that hosts rejoin soon after etcd comes back.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
		MinConnectTimeout: 2 * time.Second,
	})}
}

// StopBudget is how long the Runner's Stop may take in a cluster whose
// lease TTL is ttl: the daemon caps agents' stop grace at it.
func StopBudget(ttl time.Duration) time.Duration { return ttl / 4 }

// Fractions of the lease TTL of the renewal schedule (package doc).
const (
	renewDiv   = 10 // renew every ttl/renewDiv
	requestDiv = 5  // other etcd requests time out after ttl/requestDiv
	retryDiv   = 20 // retry a failed renewal after ttl/retryDiv
	fenceDiv   = 2  // fence ttl/fenceDiv after the last answered renewal
	overrunNum = 9  // a fence unfinished at ttl*overrunNum/overrunDen overran
	overrunDen = 10 //
)

// RideThroughTTL is the lease TTL from which hosts ride through a crash
// of the leader of a three-member etcd with etcd's default election
// timing: they rode through 10 of 10 crashes from 4s on, and 6s covers the
// longest election seen on a real etcd (2.4 s) wherever the crash falls
// (see the package doc). New warns below it.
const RideThroughTTL = 6 * time.Second

// Node is this host's member of the cluster.
type Node struct {
	o    Options
	cli  *clientv3.Client
	log  *zap.Logger
	pace pacer

	// startMu is held around each claim's Runner.Start: a fence takes it
	// once after setting fencing, so no start slips past its stops.
	startMu sync.Mutex

	// mu guards the rest (state.go).
	mu    sync.Mutex
	lease leaseState
	view  view
	place placing
	held  holdings
	wait  waiters
	stats stats
}

// member is one live member as watched.
type member struct {
	info  memberInfo
	since time.Time // local time it was first seen in this run of presence
}

// memberInfo is the value of a member key.
type memberInfo struct {
	Name    string            `json:"name"`
	Digest  string            `json:"digest"`
	Address string            `json:"address,omitempty"` // its control API, for forwarded messages
	Agents  map[string]string `json:"agents"`            // the agents it holds, by state
	// Sessions are its per-session instances: agent -> session -> state.
	Sessions map[string]map[string]string `json:"sessions,omitempty"`
}

// owner is the holder of an ownership key.
type owner struct {
	host  string
	lease clientv3.LeaseID
}

// ownerInfo is the value of an ownership key.
type ownerInfo struct {
	Host string `json:"host"`
}

// localAgent is an agent whose key this host holds.
type localAgent struct {
	rev       int64 // the claim's revision: a view older than it may not show the key yet
	starting  bool  // claimed, Runner.Start not returned yet: not Owns (messages wait)
	releasing bool  // being stopped to hand over, or to drop
	move      bool  // the release is a hand over to another member
	stopped   bool  // stopped; the key is still to be deleted
}

// Counts are the node's event counters.
type Counts struct {
	Claims  uint64 // ownership keys claimed
	Moves   uint64 // agents handed over to another member (stopped, key deleted)
	Fences  uint64 // sessions ended by self-fencing
	Lost    uint64 // agents stopped because their key vanished behind this host's back
	Renewed uint64 // lease renewals answered
}

// New checks o and makes a node; Run runs it.
func New(o Options) (*Node, error) {
	switch {
	case o.Client == nil || o.Runner == nil:
		return nil, errors.New("cluster: need a client and a runner")
	case o.Name == "":
		return nil, errors.New("cluster: need a member name")
	case o.LeaseTTL < 2*time.Second || o.LeaseTTL%time.Second != 0:
		return nil, fmt.Errorf("cluster: lease TTL %s: want whole seconds, at least 2s", o.LeaseTTL)
	case o.MovesPerSecond <= 0:
		return nil, errors.New("cluster: moves per second must be positive")
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	log := o.Log.Named("cluster")
	if o.LeaseTTL < RideThroughTTL {
		log.Warn("lease_ttl is below the measured ride-through TTL: if the etcd leader crashes, "+
			"hosts may fence (stop every agent, which start again after a few seconds) while etcd elects a new one",
			zap.Duration("lease_ttl", o.LeaseTTL), zap.Duration("ride_through_ttl", RideThroughTTL))
	}
	burst := max(1, int(o.MovesPerSecond))
	n := &Node{
		o: o, cli: o.Client, log: log,
		pace:  pacer{wake: make(chan struct{}, 1), moves: rate.NewLimiter(rate.Limit(o.MovesPerSecond), burst)},
		place: placing{wanted: map[string]bool{}},
		held:  holdings{agents: map[string]*localAgent{}, sessions: map[sessionID]int{}, locks: map[sessionID]*sessionLock{}},
		wait:  waiters{changed: make(chan struct{}), gone: map[string]chan struct{}{}},
	}
	n.view.reset()
	n.readPlacement()
	return n, nil
}

func (n *Node) memberKey(name string) string { return n.o.Prefix + "/members/" + name }
func (n *Node) agentKey(name string) string  { return n.o.Prefix + "/agents/" + name }

// Placement is the part of the config a node places: the configured
// agents' names (per-session agents aside, which run everywhere), those of
// them claimed only on demand (Want: an agent started by its first
// message has no holder until then), and the digest of the config, which
// the member key publishes.
type Placement struct {
	Agents []string
	Lazy   []string
	Digest string
}

// Refresh reads Options.Placement again (after a reload): agents that
// went are stopped and their keys dropped, new ones are placed.
func (n *Node) Refresh() {
	n.mu.Lock()
	n.readPlacement()
	n.mu.Unlock()
	n.poke()
}

// readPlacement takes in Options.Placement (n.mu held, or n not shared yet).
func (n *Node) readPlacement() {
	var p Placement
	if n.o.Placement != nil {
		p = n.o.Placement()
	}
	n.place.read(p)
}

// Owns reports whether this host holds name's key (and is not handing it
// over).
func (n *Node) Owns(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	la := n.held.agents[name]
	return la != nil && !la.releasing && !la.starting && !n.lease.fencing
}

func (n *Node) poke() { n.pace.poke() }

// Run joins the cluster and keeps this host's share of the agents running
// until ctx ends; then it stops them, leaves (revoking its lease, so that
// the others take the agents at once) and returns nil. A session that
// loses its lease fences and Run joins again with a new one.
func (n *Node) Run(ctx context.Context) error {
	backoff := 200 * time.Millisecond
	for ctx.Err() == nil {
		start := time.Now()
		err := n.session(ctx)
		if ctx.Err() != nil {
			break
		}
		n.log.Warn("cluster session ended; joining again", zap.Error(err))
		if time.Since(start) > n.o.LeaseTTL {
			backoff = 200 * time.Millisecond
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		backoff = min(2*backoff, n.o.LeaseTTL/2)
	}
	return nil
}

// session is one lease's life: grant, register, watch, renew, reconcile;
// it ends with ctx (a graceful leave) or a lost lease (a fence).
func (n *Node) session(ctx context.Context) error {
	ttl := n.o.LeaseTTL
	if err := n.connected(ctx); err != nil {
		return err
	}
	sent := time.Now()
	// The grant must be answered before the fencing deadline, which counts
	// from its sending (see renew).
	gctx, cancel := context.WithDeadline(ctx, sent.Add(ttl/fenceDiv))
	g, err := n.cli.Grant(gctx, int64(ttl/time.Second))
	cancel()
	n.count()
	if err != nil {
		return fmt.Errorf("grant a lease: %w", err)
	}
	lease := g.ID
	// Renewal starts with the lease, not with the registration: the
	// schedule and the deadline both count from the grant's sending.
	n.mu.Lock()
	n.lease.lastOK = sent
	n.mu.Unlock()
	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	lost := make(chan error, 1)
	wg.Go(func() { lost <- n.renew(sctx, lease, sent) })
	if err := n.register(ctx, lease); err != nil {
		stop()
		wg.Wait()
		n.revoke(lease)
		return err
	}
	if h, ok := n.o.Runner.(Halter); ok {
		h.Resume()
	}
	n.mu.Lock()
	n.lease.id, n.lease.fencing = lease, false
	n.newSessionLocked()
	n.mu.Unlock()
	n.log.Info("joined the cluster", zap.String("member", n.o.Name), zap.Int64("lease", int64(lease)), zap.Duration("lease_ttl", ttl))

	wg.Go(func() { n.watch(sctx) })
	wg.Go(func() { n.reconcile(sctx, lease) })
	wg.Go(func() { n.publish(sctx, lease) })

	var end error
	select {
	case <-ctx.Done():
	case end = <-lost:
	}
	if end != nil { // fence: stop everything before the lease can expire
		n.fence(end)
		stop()
		wg.Wait()
		n.revoke(lease)
		n.clearSession()
		return end
	}
	stop()
	wg.Wait()
	n.leave(lease)
	n.clearSession()
	return nil
}

// register writes this member's key, unless a live member holds the name.
func (n *Node) register(ctx context.Context, lease clientv3.LeaseID) error {
	val, err := json.Marshal(n.info())
	if err != nil {
		return err
	}
	key := n.memberKey(n.o.Name)
	rctx, cancel := context.WithTimeout(ctx, n.o.LeaseTTL/fenceDiv)
	defer cancel()
	resp, err := n.cli.Txn(rctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(val), clientv3.WithLease(lease))).
		Commit()
	n.count()
	if err != nil {
		return fmt.Errorf("register member %s: %w", n.o.Name, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("register member %s: %w", n.o.Name, ErrNameTaken)
	}
	return nil
}

// leave stops every agent this host holds, then revokes the lease: the
// others take the agents at once.
func (n *Node) leave(lease clientv3.LeaseID) {
	n.mu.Lock()
	for _, la := range n.held.agents {
		la.releasing = true // Owns and Owner say so: messages wait for the next owner
	}
	n.wait.notify()
	n.mu.Unlock()
	n.stopAll()
	n.revoke(lease)
	n.log.Info("left the cluster", zap.String("member", n.o.Name))
}

// stopAll stops every agent this host holds, at once, and waits.
func (n *Node) stopAll() {
	n.mu.Lock()
	names := make([]string, 0, len(n.held.agents))
	for a := range n.held.agents {
		names = append(names, a)
	}
	n.mu.Unlock()
	var wg sync.WaitGroup
	for _, a := range names {
		wg.Go(func() { n.o.Runner.Stop(a) })
	}
	wg.Wait()
}

// newSessionLocked starts the view of a new session (or of none): no key
// listed yet, no pass made, and the waiters told. n.mu is held.
func (n *Node) newSessionLocked() {
	n.view.reset()
	n.lease.passed = false
	n.wait.notify()
}

// clearSession forgets the session's keys: whatever this host held went
// with its lease.
func (n *Node) clearSession() {
	n.mu.Lock()
	n.lease.id = 0
	n.held.agents = map[string]*localAgent{}
	n.held.sessions = map[sessionID]int{}
	n.newSessionLocked()
	n.mu.Unlock()
}

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// count records one etcd request.
func (n *Node) count() {
	n.mu.Lock()
	n.stats.requests++
	n.mu.Unlock()
}
