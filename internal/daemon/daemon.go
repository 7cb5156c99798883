// Package daemon is `toolhostd serve`: it runs the [agent.<name>] entries of
// the config under a suture tree (one sub-supervisor per tooling, inside the
// gateway hub, and one per agent) with each agent's restart policy, reloads
// the config on request (starting what was added, stopping what was removed,
// restarting only what changed), shuts down in order and bounded in time,
// talks to systemd (readiness, reload, stop, watchdog) and is the control
// API's Backend. Its graph (audit log, providers, toolings, hub, host) is
// built by package system, as every command's is.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/thejerf/suture/v4"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/audit"
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/gateway"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/metrics"
	"github.com/toolhostd/toolhostd/internal/system"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// Time bounds of the shutdown and of agent removal beyond each agent's
// stop grace.
const (
	// stopMargin is what an agent gets past its stop grace to end after it
	// was interrupted (an epoch tick, releasing its calls and store).
	stopMargin = 5 * time.Second
	// hubStopTimeout bounds how long Serve waits for the toolings (closing
	// sessions, stopping server processes) once every agent has stopped.
	hubStopTimeout = 30 * time.Second
	// monitorEvery is how often the tooling monitor samples the sessions.
	monitorEvery = 100 * time.Millisecond
)

var (
	_ control.Backend       = (*Daemon)(nil)
	_ control.ConfigBackend = (*Daemon)(nil)
)

// Option tunes a Daemon beyond its config.
type Option func(*options)

type options struct {
	toolingOpts mcpclient.Options
	readyGate   <-chan struct{}
	epochTick   time.Duration
	metrics     bool
	overrun     func() // cluster.go
	version     string
}

// WithMetrics makes the daemon keep metrics (Metrics): the toolings' calls,
// reads and notifications (every tooling is instrumented, including those
// a reload adds), the agents' traps and inbox counters, and at each scrape
// the state of its agents, toolings and cluster; a reload drops the series
// of what it removes.
func WithMetrics() Option { return func(o *options) { o.metrics = true } }

// WithToolingOptions applies opts to every MCP tooling the daemon makes,
// including those a reload adds.
func WithToolingOptions(opts mcpclient.Options) Option {
	return func(o *options) { o.toolingOpts = opts }
}

// WithReadyGate makes Serve tell systemd READY=1 only once gate is closed
// as well (the control socket listens), besides every agent having started.
func WithReadyGate(gate <-chan struct{}) Option {
	return func(o *options) { o.readyGate = gate }
}

// WithVersion is toolhostd's version, as the MCP handshake and A2A cards
// name it.
func WithVersion(v string) Option { return func(o *options) { o.version = v } }

// WithEpochTick sets the engine's epoch tick (engine.Options.EpochTick).
func WithEpochTick(d time.Duration) Option { return func(o *options) { o.epochTick = d } }

// Daemon runs the agents and toolings of one config.
type Daemon struct {
	cfgPath string
	log     *zap.Logger
	baseLog *zap.Logger // un-named, for the toolings
	opts    options
	sys     *system.System // the graph: audit, providers, toolings, hub, host
	hub     *gateway.Hub   // sys.Hub
	host    *host.Host     // sys.Host
	fuel    bool           // the engine meters fuel
	notify  *notifier

	// opMu serialises Reload, the agent operations and the shutdown.
	opMu sync.Mutex

	mu       sync.Mutex
	cfg      *config.Config
	toolings map[string]*toolingRec
	agents   map[string]*agentRec
	root     *suture.Supervisor // set while Serve runs
	served   bool
	stopping bool
	startWG  sync.WaitGroup // first instance of each agent at Serve
	started  chan struct{}  // closed once startWG is done

	metrics *metrics.Metrics // WithMetrics; nil: none
	audit   *audit.Log       // sys.Audit: [host] audit_log; nil: none (grants.go)
	router  *message.Router  // messages to the agents (messages.go)
	protos  *protocols       // MCP and A2A endpoints, peers (protocols.go); set by New

	cluster *clusterState // [cluster]; nil: a single host (cluster.go)
	halted  bool          // fenced: no instance may start (cluster.go)

	closeOnce sync.Once
	closeErr  error
}

// toolingRec is one configured tooling and what the monitor learnt of it.
type toolingRec struct {
	cfg *config.Tooling
	t   tooling.Tooling

	// guarded by Daemon.mu
	connectedOnce bool
	wasConnected  bool
	tools         int
}

// statuser is the part of *mcpclient.Client the status reports use.
type statuser interface{ Status() mcpclient.Status }

// status finds t's statuser, under any instrumentation.
func status(t tooling.Tooling) (statuser, bool) {
	for {
		if s, ok := t.(statuser); ok {
			return s, true
		}
		u, ok := t.(metrics.Unwrapper)
		if !ok {
			return nil, false
		}
		t = u.Unwrap()
	}
}

// New builds the daemon for cfg (read from cfgPath, which Reload reads
// again): the toolings (not connected yet), the gateway hub and the host with
// its engine (fuel metering on when some agent has limits.fuel > 0).
// Nothing runs until Serve; Close releases a daemon that is never served.
func New(cfgPath string, cfg *config.Config, log *zap.Logger, opts ...Option) (*Daemon, error) {
	if cfg == nil {
		return nil, errors.New("daemon: no config")
	}
	if log == nil {
		log = zap.NewNop()
	}
	if err := checkThreads(cfg, maxThreads(cfg)); err != nil {
		return nil, err
	}
	raiseMaxThreads(maxThreads(cfg))
	d := &Daemon{
		cfgPath:  cfgPath,
		log:      log.Named("daemon"),
		baseLog:  log,
		cfg:      cfg,
		toolings: map[string]*toolingRec{},
		agents:   map[string]*agentRec{},
		notify:   newNotifier(log.Named("systemd")),
		started:  make(chan struct{}),
	}
	for _, o := range opts {
		o(&d.opts)
	}
	// The cluster's etcd client first: the key-value store's etcd backend
	// keeps its keys there, and the router's idempotency ledger.
	if err := d.setupCluster(cfg); err != nil {
		return nil, err
	}
	sopts := []system.Option{system.WithToolingOptions(d.opts.toolingOpts), system.WithEpochTick(d.opts.epochTick)}
	if d.opts.metrics {
		d.metrics = metrics.New(metrics.Options{Source: d}) // read at scrape time, once d serves
		sopts = append(sopts, system.WithMetrics(d.metrics))
	}
	if d.cluster != nil {
		sopts = append(sopts, system.WithStoreClient(d.cluster.cli))
	}
	sys, err := system.New(cfg, log, sopts...)
	if err != nil {
		d.closeCluster()
		return nil, err
	}
	d.sys, d.audit, d.hub, d.host = sys, sys.Audit, sys.Hub, sys.Host
	d.router = d.newRouter(cfg)
	if err := d.setupProtocols(cfg, d.opts.version); err != nil {
		d.stopProtocols()
		_ = sys.Close()
		d.closeCluster()
		return nil, err
	}
	d.fuel = system.HostOptions(cfg, log).Engine.Fuel
	for name, t := range sys.Toolings {
		d.toolings[name] = &toolingRec{cfg: cfg.Tooling[name], t: t}
	}
	for name, a := range cfg.Agent {
		d.agents[name] = newAgentRec(name, a, d.recorder())
	}
	return d, nil
}

// Metrics are the daemon's metrics (nil without WithMetrics).
func (d *Daemon) Metrics() *metrics.Metrics { return d.metrics }

// makeToolings builds a tooling per config entry (Reload's additions),
// as New's are built.
func (d *Daemon) makeToolings(cfgs map[string]*config.Tooling) (map[string]*toolingRec, error) {
	ts, err := d.sys.MakeToolings(cfgs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*toolingRec, len(ts))
	for name, t := range ts {
		out[name] = &toolingRec{cfg: cfgs[name], t: t}
	}
	return out, nil
}

// needsFuel reports whether some agent of cfg has a fuel limit (the
// engine then meters fuel).
func needsFuel(cfg *config.Config) bool { return system.HostOptions(cfg, nil).Engine.Fuel }

// Serve runs the toolings and every configured agent until ctx ends, then
// stops everything in order: each agent gets its shutdown envelope and its
// stop grace (then it is interrupted), then in-flight calls are cancelled,
// sessions closed and server processes stopped. It returns nil after a stop
// caused by ctx. Serve is called once; the daemon is closed when it returns.
func (d *Daemon) Serve(ctx context.Context) error {
	d.mu.Lock()
	if d.served {
		d.mu.Unlock()
		return ErrServed
	}
	d.served = true
	d.mu.Unlock()
	defer d.Close()

	hook := func(e suture.Event) {
		d.log.Debug("supervisor event", zap.String("event", e.String()))
	}
	root := suture.New("toolhostd", suture.Spec{EventHook: hook, Timeout: hubStopTimeout})
	hubDone := make(chan struct{})
	root.Add(&hubService{hub: d.hub, done: hubDone})

	d.opMu.Lock()
	d.mu.Lock()
	d.root = root
	names := sortedKeys(d.agents)
	if d.clustered() {
		names = d.onEveryHost(names) // per-session agents; the cluster node starts those placed here
	}
	d.startWG.Add(len(names))
	for _, name := range names {
		d.startLocked(d.agents[name], d.startWG.Done)
	}
	d.mu.Unlock()
	d.opMu.Unlock()

	auditCtx, stopAudit := context.WithCancel(context.Background())
	auditDone := d.sys.RunAudit(auditCtx)
	defer func() { stopAudit(); <-auditDone }()
	rootCtx, stopRoot := context.WithCancel(context.Background())
	defer stopRoot()
	rootDone := root.ServeBackground(rootCtx)
	d.runCluster()
	d.serveProtocols()

	monCtx, stopMon := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	bg.Go(func() { d.monitor(monCtx) })
	bg.Go(func() { d.notify.watchdog(monCtx) })
	bg.Go(func() { d.announceReady(monCtx) })

	<-ctx.Done()
	d.log.Info("shutting down")
	d.notify.send("STOPPING=1")
	stopMon()
	bg.Wait()
	d.stopProtocols()
	d.stopCluster()
	d.shutdown(root, stopRoot, rootDone, hubDone)
	return nil
}

// announceReady tells systemd READY=1 once the daemon is Ready (every
// agent started or failed to, every tooling connected once), as /readyz
// reports it, and the ready gate (the control socket) is open.
func (d *Daemon) announceReady(ctx context.Context) {
	go func() { d.startWG.Wait(); close(d.started) }()
	select {
	case <-d.started:
	case <-ctx.Done():
		return
	}
	t := time.NewTicker(monitorEvery)
	defer t.Stop()
	for !d.Ready() {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
	if g := d.opts.readyGate; g != nil {
		select {
		case <-g:
		case <-ctx.Done():
			return
		}
	}
	d.log.Info("ready")
	d.notify.send("READY=1")
}

// shutdown stops every agent (at once, each bounded by its stop grace),
// then the toolings, then the engine.
func (d *Daemon) shutdown(root *suture.Supervisor, stopRoot context.CancelFunc, rootDone <-chan error, hubDone <-chan struct{}) {
	d.opMu.Lock()
	defer d.opMu.Unlock()
	d.mu.Lock()
	d.stopping = true
	recs := make([]*agentRec, 0, len(d.agents))
	for _, r := range d.agents {
		recs = append(recs, r)
	}
	d.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range recs {
		wg.Go(func() { d.stopRec(r, stateStopped) })
	}
	wg.Wait()
	stopRoot()
	select {
	case <-rootDone:
	case <-time.After(hubStopTimeout + stopMargin):
		d.log.Error("the supervisor tree did not stop in time")
	}
	select {
	case <-hubDone:
	case <-time.After(hubStopTimeout):
		d.log.Error("the toolings did not stop in time")
	}
	d.mu.Lock()
	d.root = nil
	d.mu.Unlock()
	d.log.Info("stopped")
}

// Close releases the engine and the key-value store (after every agent
// stopped: Serve's shutdown comes first), then the cluster's etcd client.
// Serve calls it when it returns; call it only for a daemon that is never
// served.
func (d *Daemon) Close() error {
	d.closeOnce.Do(func() {
		d.stopProtocols()
		d.closeErr = d.sys.Close()
		d.closeCluster()
	})
	return d.closeErr
}

// hubService runs the gateway hub (its own supervisor with one sub-supervisor
// per tooling) under the daemon's root. Hub.Serve runs once: should the
// root restart the service, it does not start the hub again.
type hubService struct {
	hub  *gateway.Hub
	done chan struct{}
	once sync.Once
}

func (s *hubService) Serve(ctx context.Context) error {
	ran := false
	s.once.Do(func() {
		ran = true
		defer close(s.done)
		_ = s.hub.Serve(ctx)
	})
	if !ran || ctx.Err() == nil {
		return fmt.Errorf("the gateway hub ended: %w", suture.ErrDoNotRestart)
	}
	return ctx.Err()
}

func (s *hubService) String() string { return "gateway" }

// monitor samples the toolings' sessions: whether each connected at least
// once, and its tool count after each (re)connection.
func (d *Daemon) monitor(ctx context.Context) {
	t := time.NewTicker(monitorEvery)
	defer t.Stop()
	for {
		d.sampleToolings(ctx, true)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sampleToolings updates connectedOnce and, with fetch (the monitor),
// fetches the tool count on each new connection (ctx bounds the
// tools/list).
func (d *Daemon) sampleToolings(ctx context.Context, fetch bool) {
	d.mu.Lock()
	recs := make([]*toolingRec, 0, len(d.toolings))
	for _, r := range d.toolings {
		recs = append(recs, r)
	}
	d.mu.Unlock()
	for _, r := range recs {
		st, ok := status(r.t)
		if !ok {
			continue
		}
		up := st.Status().Connected
		d.mu.Lock()
		if up {
			r.connectedOnce = true
		}
		fresh := false
		if fetch {
			fresh = up && !r.wasConnected
			r.wasConnected = up
		}
		d.mu.Unlock()
		if fresh {
			lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			tools, err := r.t.ListTools(lctx)
			cancel()
			d.mu.Lock()
			if err == nil {
				r.tools = len(tools)
			} else {
				r.wasConnected = false // try again at the next sample
			}
			d.mu.Unlock()
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
