// Package cluster spreads the agents of one config over several hosts with
// etcd: membership (a lease and a member key per host), rendezvous
// placement of agent names over the settled members, ownership keys
// claimed in transactions and attached to the owner's lease, paced hand
// overs, and self-fencing: a host that cannot renew its lease stops its
// agents before the lease can have expired at etcd. It knows agents only
// by name, through a Runner.
//
// # The guarantee
//
// At most one host runs an agent at any time, under these assumptions:
//
//  1. Clocks advance at the same rate on the hosts and on the etcd
//     leader, within the margin below (a quarter of the TTL, far more than
//     any real drift); their absolute values do not matter.
//  2. The Runner's Stop returns only once the agent no longer runs, and
//     within StopBudget(lease_ttl) = lease_ttl/4 of being called (the
//     daemon caps every agent's stop grace at that in a cluster, and an
//     interrupted guest stops at its next epoch tick).
//  3. The host's process is not paused (SIGSTOP, a VM freeze) for longer
//     than lease_ttl/4 while it holds agents.
//  4. Nobody deletes ownership keys or revokes leases behind the hosts'
//     backs (a host whose own key disappears stops that agent at once,
//     but cannot undo what ran meanwhile).
//
// The daemon's Stop waits for its operation lock, which a reload may hold
// while it stops agents itself; so the daemon is also a Halter: a fence
// first halts every running instance directly (each stops within the
// capped grace), then cleans up through Stop.
//
// Why it holds: an agent runs only on the host that holds its key
// PREFIX/agents/NAME, which is created only if absent and attached to the
// owner's lease; the key goes away only when the owner deletes it, after
// its Stop returned, or when the owner's lease expires at etcd. The owner
// remembers the local time at which it sent the last grant or renewal
// that etcd answered, t_ok: etcd granted or renewed the lease at or after
// t_ok, so it cannot expire before t_ok + lease_ttl. (Not the time of the
// answer: etcd counts the TTL from when it handled the request, which may
// be any time between the sending and the answer.) t_ok starts as the
// grant's sending, and the renewals (every lease_ttl/5) count from it
// too, starting while the member key is still being written: a slow join
// does not eat the deadline's room before the first renewal.
// From t_ok + lease_ttl/2 on, with no newer answered renewal, the host
// fences: it stops every agent at once (assumption 2: done by
// t_ok + 3/4 lease_ttl), then drops the lease. That leaves lease_ttl/4 of
// margin before another host can claim any of them. A fence that has not
// finished by t_ok + 9/10 lease_ttl calls Options.Overrun (serve exits the
// process: an ended process runs nothing).
//
// On a partition, the cut-off host fences within lease_ttl/2 of its last
// answered renewal, whatever the reason (etcd down, quorum lost, network);
// the other hosts take its agents only after its lease expired, so each
// agent is down for about lease_ttl plus the time to start it. When every
// etcd member is gone, every host fences; the agents come back when etcd
// does. Losing one etcd member of three changes nothing (the lease is
// renewed through the others). A side effect an agent caused before it
// stopped (a tool call an MCP server is still executing) is not undone.
//
// # Placement and pacing
//
// A member counts for placement once it has been seen continuously for
// Options.Settle: a member that flaps (leaves and comes back within the
// settle time) never gets agents, so nothing bounces. Each agent belongs on
// the settled member with the highest rendezvous weight; a joining member
// wins about 1/N of the agents and only those move. An owner hands over
// agents that now belong elsewhere at most Options.MovesPerSecond a second
// (stop, then delete the key); the new owner claims a free key at once
// (an agent whose owner died is not paced).
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
	"google.golang.org/grpc/connectivity"
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
	Digest         string        // the config's digest, published in the member key

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
	renewDiv   = 5  // renew every ttl/renewDiv
	fenceDiv   = 2  // fence ttl/fenceDiv after the last answered renewal
	overrunNum = 9  // a fence unfinished at ttl*overrunNum/overrunDen overran
	overrunDen = 10 //
)

// Node is this host's member of the cluster.
type Node struct {
	o       Options
	cli     *clientv3.Client
	log     *zap.Logger
	limiter *rate.Limiter
	wake    chan struct{}

	// startMu is held around each claim's Runner.Start: a fence takes it
	// once after setting fencing, so no start slips past its stops.
	startMu sync.Mutex

	mu      sync.Mutex
	lease   clientv3.LeaseID // the current session's; 0 between sessions
	joined  time.Time        // when the current session's member key was written
	synced  bool             // the view was listed in this session
	fencing bool
	passed  bool // a reconcile pass ran with this member settled
	members map[string]*member
	owners  map[string]owner // agent -> holder, as watched
	viewRev int64            // the etcd revision the view is at
	agents  map[string]bool  // configured
	// targets caches each agent's placement over the settled members
	// named by targetsKey (nil: to compute).
	targets    map[string]string
	targetsKey string
	local      map[string]*localAgent
	digest     string
	counts     Counts
	lastOK     time.Time
	revs       int64 // etcd requests made (reads, writes, renewals)
}

// member is one live member as watched.
type member struct {
	info  memberInfo
	since time.Time // local time it was first seen in this run of presence
}

// memberInfo is the value of a member key.
type memberInfo struct {
	Name   string            `json:"name"`
	Digest string            `json:"digest"`
	Agents map[string]string `json:"agents"` // the agents it holds, by state
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
	burst := max(1, int(o.MovesPerSecond))
	return &Node{
		o: o, cli: o.Client, log: o.Log.Named("cluster"),
		limiter: rate.NewLimiter(rate.Limit(o.MovesPerSecond), burst),
		wake:    make(chan struct{}, 1),
		members: map[string]*member{}, owners: map[string]owner{},
		agents: map[string]bool{}, local: map[string]*localAgent{},
		digest: o.Digest,
	}, nil
}

func (n *Node) memberKey(name string) string { return n.o.Prefix + "/members/" + name }
func (n *Node) agentKey(name string) string  { return n.o.Prefix + "/agents/" + name }

// SetAgents sets the configured agents' names (at start and after each
// reload): agents that went are stopped and their keys dropped, new ones
// are placed.
func (n *Node) SetAgents(names []string) {
	n.mu.Lock()
	n.agents = make(map[string]bool, len(names))
	for _, a := range names {
		n.agents[a] = true
	}
	n.targets = nil
	n.mu.Unlock()
	n.poke()
}

// SetDigest sets the config digest this member publishes.
func (n *Node) SetDigest(d string) {
	n.mu.Lock()
	n.digest = d
	n.mu.Unlock()
	n.poke()
}

// Owns reports whether this host holds name's key (and is not handing it
// over).
func (n *Node) Owns(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	la := n.local[name]
	return la != nil && !la.releasing && !n.fencing
}

func (n *Node) poke() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

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
	n.lastOK = sent
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
	n.lease, n.joined = lease, time.Now()
	n.synced, n.passed, n.fencing = false, false, false
	n.members, n.owners = map[string]*member{}, map[string]owner{}
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

// info is this member's key value now.
func (n *Node) info() memberInfo {
	n.mu.Lock()
	names := make([]string, 0, len(n.local))
	for a, la := range n.local {
		if !la.stopped {
			names = append(names, a)
		}
	}
	digest := n.digest
	n.mu.Unlock()
	states := make(map[string]string, len(names))
	for _, a := range names {
		if s := n.o.Runner.State(a); s != "" {
			states[a] = s
		}
	}
	return memberInfo{Name: n.o.Name, Digest: digest, Agents: states}
}

// publish keeps the member key's value (digest, agents and states)
// current, at most about once a second.
func (n *Node) publish(ctx context.Context, lease clientv3.LeaseID) {
	var last []byte
	t := time.NewTicker(publishEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		val, err := json.Marshal(n.info())
		if err != nil || string(val) == string(last) {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, n.o.LeaseTTL/renewDiv)
		_, err = n.cli.Put(pctx, n.memberKey(n.o.Name), string(val), clientv3.WithLease(lease))
		cancel()
		n.count()
		if err == nil {
			last = val
		}
	}
}

// publishEvery is how often the member key's value is refreshed.
const publishEvery = time.Second

// revoke drops a lease (and with it every key on it), best effort.
func (n *Node) revoke(lease clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), n.o.LeaseTTL/renewDiv)
	defer cancel()
	if _, err := n.cli.Revoke(ctx, lease); err != nil {
		n.log.Debug("revoke the lease", zap.Int64("lease", int64(lease)), zap.Error(err))
	}
	n.count()
}

// leave stops every agent this host holds, then revokes the lease: the
// others take the agents at once.
func (n *Node) leave(lease clientv3.LeaseID) {
	n.stopAll()
	n.revoke(lease)
	n.log.Info("left the cluster", zap.String("member", n.o.Name))
}

// stopAll stops every agent this host holds, at once, and waits.
func (n *Node) stopAll() {
	n.mu.Lock()
	names := make([]string, 0, len(n.local))
	for a := range n.local {
		names = append(names, a)
	}
	n.mu.Unlock()
	var wg sync.WaitGroup
	for _, a := range names {
		wg.Go(func() { n.o.Runner.Stop(a) })
	}
	wg.Wait()
}

// fence stops every agent at once, before the lease can have expired.
func (n *Node) fence(why error) {
	n.mu.Lock()
	n.fencing = true
	n.counts.Fences++
	deadline := n.lastOK.Add(n.o.LeaseTTL * overrunNum / overrunDen)
	held := len(n.local)
	n.mu.Unlock()
	// A barrier: a claim between its answer and its Start finishes first
	// (fencing is set, so no later one starts).
	n.startMu.Lock()
	n.startMu.Unlock() //lint:ignore SA2001 the empty section is the barrier
	n.log.Error("fencing: the lease could not be renewed; stopping every agent before it can expire",
		zap.Error(why), zap.Int("agents", held), zap.Time("expires_not_before", n.lastOK.Add(n.o.LeaseTTL)))
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

// clearSession forgets the session's keys: whatever this host held went
// with its lease.
func (n *Node) clearSession() {
	n.mu.Lock()
	n.lease = 0
	n.local = map[string]*localAgent{}
	n.members, n.owners = map[string]*member{}, map[string]owner{}
	n.synced, n.passed = false, false
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
	n.revs++
	n.mu.Unlock()
}
