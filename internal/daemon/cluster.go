package daemon

// [cluster]: the daemon is one host of several that share the config's
// agents through etcd (internal/cluster). It then starts an agent only
// when its cluster node claimed it, stops it when the node hands it over or
// fences, and caps every agent's stop grace at the node's stop budget.

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"os"
	"reflect"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/toolhostd/toolhostd/internal/cluster"
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/forward"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/idem"
)

// clusterState is the daemon's cluster part; nil fields without [cluster].
type clusterState struct {
	cli  *clientv3.Client
	node *cluster.Node
	fwd  *forward.Forwarder // nil: no control token, no forwarding
	// ledger keeps the router's idempotency keys in etcd (set by
	// newRouter); closed before the client.
	ledger *idem.Ledger
	// insts are the running per-session instances (guarded by Daemon.mu),
	// which Halt stops with the others.
	insts map[*host.Agent]bool
	ttl   time.Duration
	cfg   config.Cluster // as started: a reload does not change it
	stop  context.CancelFunc
	done  chan struct{}
	// placed is what the node places (placement), the running config's.
	placed atomic.Pointer[cluster.Placement]
}

// WithFenceOverrun sets what happens when a fence did not stop the agents
// in time (cluster.Options.Overrun); serve exits the process.
func WithFenceOverrun(f func()) Option { return func(o *options) { o.overrun = f } }

// setupCluster connects to etcd (lazily: no request yet) and makes the
// node, for a config with [cluster].
func (d *Daemon) setupCluster(cfg *config.Config) error {
	c := cfg.Cluster
	if c == nil {
		return nil
	}
	ccfg, err := etcdConfig(c, d.baseLog)
	if err != nil {
		return err
	}
	address, fwd, err := d.setupForwarding(cfg)
	if err != nil {
		return err
	}
	cli, err := clientv3.New(ccfg)
	if err != nil {
		closeForwarder(fwd)
		return fmt.Errorf("cluster: etcd client: %w", err)
	}
	cs := &clusterState{cli: cli, fwd: fwd, ttl: c.LeaseTTL.Duration, cfg: *c, insts: map[*host.Agent]bool{}}
	cs.placed.Store(d.placementOf(cfg))
	node, err := cluster.New(cluster.Options{
		Client: cli, Runner: clusterRunner{d}, Log: d.baseLog,
		Name: c.Name, Prefix: c.Prefix, LeaseTTL: c.LeaseTTL.Duration,
		Settle: c.Settle.Duration, MovesPerSecond: c.MovesPerSecond,
		Placement: func() cluster.Placement { return *cs.placed.Load() }, Overrun: d.opts.overrun, Address: address,
	})
	if err != nil {
		closeForwarder(fwd)
		_ = cli.Close()
		return err
	}
	cs.node = node
	d.cluster = cs
	return nil
}

// placementOf is cfg's cluster.Placement: what the node places (read
// without the daemon's lock: a reload refreshes the node holding d.mu).
func (d *Daemon) placementOf(cfg *config.Config) *cluster.Placement {
	return &cluster.Placement{Agents: placedAgents(cfg), Lazy: lazyAgents(cfg), Digest: fileDigest(d.cfgPath)}
}

// etcdConfig is the etcd client's config for c (secrets expanded here).
func etcdConfig(c *config.Cluster, log *zap.Logger) (clientv3.Config, error) {
	e := c.Etcd
	cc := clientv3.Config{
		Endpoints: e.Endpoints, DialTimeout: e.DialTimeout.Duration,
		DialKeepAliveTime: c.LeaseTTL.Duration / 5, DialKeepAliveTimeout: c.LeaseTTL.Duration / 5,
		Logger:      log.Named("etcd").WithOptions(zap.IncreaseLevel(zapcore.WarnLevel)),
		DialOptions: cluster.DialOptions(),
	}
	var err error
	if cc.Username, err = config.Expand(e.Username); err != nil {
		return cc, fmt.Errorf("cluster: etcd.username: %w", err)
	}
	if cc.Password, err = config.Expand(e.Password); err != nil {
		return cc, fmt.Errorf("cluster: etcd.password: %w", err)
	}
	if t := e.TLS; t != nil {
		tc := &tls.Config{ServerName: t.ServerName, MinVersion: tls.VersionTLS12}
		if t.CAFile != "" {
			pem, err := os.ReadFile(t.CAFile)
			if err != nil {
				return cc, fmt.Errorf("cluster: etcd.tls.ca_file: %w", err)
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return cc, fmt.Errorf("cluster: etcd.tls.ca_file %s: no PEM certificate", t.CAFile)
			}
		}
		if t.CertFile != "" {
			cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
			if err != nil {
				return cc, fmt.Errorf("cluster: etcd.tls client certificate: %w", err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		cc.TLS = tc
	}
	return cc, nil
}

// fileDigest is the sha256 of the config file ("" when it cannot be read).
func fileDigest(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || path == "" {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// clustered reports whether the daemon is a cluster host.
func (d *Daemon) clustered() bool { return d.cluster != nil }

// runCluster starts the node (Serve, after the root supervisor exists).
func (d *Daemon) runCluster() {
	if d.cluster == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.cluster.stop, d.cluster.done = cancel, make(chan struct{})
	go func() {
		defer close(d.cluster.done)
		_ = d.cluster.node.Run(ctx)
	}()
}

// stopCluster leaves the cluster: the node stops this host's agents and
// revokes its lease (before Serve's shutdown, which needs opMu).
func (d *Daemon) stopCluster() {
	if d.cluster == nil || d.cluster.stop == nil {
		return
	}
	d.cluster.stop()
	<-d.cluster.done
}

// closeCluster ends the forwarded streams and closes the etcd client.
func (d *Daemon) closeCluster() {
	if d.cluster != nil {
		closeForwarder(d.cluster.fwd)
		if l := d.cluster.ledger; l != nil {
			l.Close() // its writes in flight end first
		}
		_ = d.cluster.cli.Close()
	}
}

func closeForwarder(f *forward.Forwarder) {
	if f != nil {
		_ = f.Close()
	}
}

// stopGrace is an agent's effective stop grace: in a cluster at most the
// node's stop budget (see the cluster package's guarantee).
func (d *Daemon) stopGrace(g time.Duration) time.Duration {
	if d.cluster == nil {
		return g
	}
	return min(g, cluster.StopBudget(d.cluster.ttl))
}

// listed reports whether Agents shows r: in a cluster, only the agents
// this host holds or still runs.
func (d *Daemon) listed(r *agentRec) bool {
	return d.cluster == nil || r.hasSup || d.cluster.node.Owns(r.name)
}

// clusterReady is the cluster's part of Ready.
func (d *Daemon) clusterReady() bool { return d.cluster == nil || d.cluster.node.Ready() }

// checkOwner refuses an operator's start or restart of an agent another
// host runs.
func (d *Daemon) checkOwner(name string) error {
	if d.cluster != nil && !d.cluster.node.Owns(name) && !d.everyHost(name) {
		return fmt.Errorf("%w: %q", ErrNotOwner, name)
	}
	return nil
}

// reloaded applies a new config to the protocol endpoints (which agents
// are exposed) and tells the node its agents and digest.
func (d *Daemon) reloaded(cur *config.Config) {
	d.reloadProtocols(cur)
	if d.cluster == nil {
		return
	}
	if cur.Cluster == nil || !reflect.DeepEqual(*cur.Cluster, d.cluster.cfg) {
		d.log.Warn("reload: [cluster] changed; it applies only when toolhostd restarts")
	}
	d.cluster.placed.Store(d.placementOf(cur))
	d.cluster.node.Refresh()
}

// startsOnReload reports whether a reload starts an added or changed agent
// here: in a cluster only one this host holds or a per-session agent,
// which every host runs (the node starts the rest once claimed). The
// caller holds d.mu.
func (d *Daemon) startsOnReload(r *agentRec) bool {
	return d.cluster == nil || d.cluster.node.Owns(r.name) || isPerSession(r.cfg)
}

// everyHost reports a per-session agent, which every host runs.
func (d *Daemon) everyHost(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.agents[name]
	return r != nil && isPerSession(r.cfg)
}

// Cluster reports the cluster's view; false without [cluster].
func (d *Daemon) Cluster() (control.ClusterStatus, bool) {
	if d.cluster == nil {
		return control.ClusterStatus{}, false
	}
	st := d.cluster.node.Status()
	out := control.ClusterStatus{
		Name: st.Name, Joined: st.Joined, Fencing: st.Fencing, Lease: st.Lease,
		LastRenew: st.LastRenew, Digest: st.Digest, Owners: st.Owners, Owned: st.Owned,
		Claims: st.Counts.Claims, Moves: st.Counts.Moves, Fences: st.Counts.Fences,
		Lost: st.Counts.Lost, Requests: st.Requests,
	}
	for _, m := range st.Members {
		out.Members = append(out.Members, control.ClusterMember{
			Name: m.Name, Digest: m.Digest, Settled: m.Settled, Agents: m.Agents,
			SameConfig: m.Digest == st.Digest, Address: m.Address, Sessions: m.Sessions,
		})
	}
	return out, true
}

// startInstance starts an instance of the service's agent unless the host
// is halted (nil then). The check, the start and the record happen under
// d.mu, so Halt sees every instance that started before it.
func (s *agentService) startInstance(prog *host.Program, env map[string]string) *host.Agent {
	cfg := s.agentConfig(env)
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.halted {
		return nil
	}
	inst := d.host.Start(prog, cfg, s.cfg.Input)
	if r := s.r; r.gen == s.gen {
		if r.started {
			r.restarts++
		}
		r.started = true
		r.inst = inst
		r.setState(stateRunning)
	}
	return inst
}

// isHalted reports whether a fence halted the host's agents.
func (d *Daemon) isHalted() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.halted
}

// clusterRunner is the daemon as the node's Runner.
type clusterRunner struct{ d *Daemon }

func (c clusterRunner) Start(name string) {
	d := c.d
	d.opMu.Lock()
	defer d.opMu.Unlock()
	r, err := d.agentOp(name)
	if err != nil {
		return
	}
	d.mu.Lock()
	if r.hasSup && !r.final {
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	d.stopRec(r, stateStopped) // an exited or failed agent's empty supervisor
	d.mu.Lock()
	defer d.mu.Unlock()
	r.delay, r.backoff = 0, r.cfg.RestartBackoff.Initial.Duration
	d.startLocked(r, nil)
	d.log.Info("agent placed here", zap.String("agent", name))
}

func (c clusterRunner) Stop(name string) {
	d := c.d
	d.opMu.Lock()
	defer d.opMu.Unlock()
	d.mu.Lock()
	r := d.agents[name]
	d.mu.Unlock()
	if r == nil {
		return
	}
	d.stopRec(r, stateStopped)
	d.settleMessages() // before the node hands the agent over
}

// Halt stops every running instance at once and waits, without the
// operation lock (a reload may hold it): the fence's fast path. Until
// Resume no instance starts.
func (c clusterRunner) Halt() {
	d := c.d
	d.mu.Lock()
	d.halted = true
	var insts []*host.Agent
	for _, r := range d.agents {
		if r.inst != nil {
			insts = append(insts, r.inst)
			r.setState(stateStopping)
		}
	}
	for inst := range d.cluster.insts {
		insts = append(insts, inst)
	}
	d.mu.Unlock()
	for _, inst := range insts {
		inst.Stop()
	}
	for _, inst := range insts {
		<-inst.Done()
	}
}

// Resume lets instances start again (a new session).
func (c clusterRunner) Resume() {
	c.d.mu.Lock()
	c.d.halted = false
	c.d.mu.Unlock()
}

func (c clusterRunner) State(name string) string {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	if r := c.d.agents[name]; r != nil {
		return r.state
	}
	return ""
}

// Sessions lists the agent's per-session instances by state (for the
// cluster's view).
func (c clusterRunner) Sessions(name string) map[string]string {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	r := c.d.agents[name]
	if r == nil || r.pool == nil {
		return nil
	}
	out := map[string]string{}
	for _, st := range r.pool.List() {
		out[st.Session] = st.State
	}
	return out
}

func (c clusterRunner) Started(name string) bool {
	s := c.State(name)
	return s != "" && s != stateStarting
}
