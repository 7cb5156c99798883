// Package daemon is `toolhostd serve`: it runs the [agent.<name>] entries of
// the config under a suture tree (one sub-supervisor per tooling, inside the
// gateway hub, and one per agent) with each agent's restart policy, reloads
// the config on request (starting what was added, stopping what was removed,
// restarting only what changed), shuts down in order and bounded in time,
// talks to systemd (readiness, reload, stop, watchdog) and is the control
// API's Backend. Its graph (audit log, providers, toolings, hub, host, the
// supervisor, the router, the endpoints, the cluster's pieces) is built by
// package system (system.NewServe), as every command's is.
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

	"github.com/toolhostd/toolhostd/internal/cluster"
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/gateway"
	"github.com/toolhostd/toolhostd/internal/metrics"
	"github.com/toolhostd/toolhostd/internal/system"
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

// Options tune a Daemon beyond its config; the zero value serves the
// config with no metrics.
type Options struct {
	// Log is the daemon's logger; nil: none.
	Log *zap.Logger
	// Metrics makes the daemon keep metrics (Daemon.Metrics): the
	// toolings' calls, reads and notifications (every tooling is
	// instrumented, including those a reload adds), the agents' traps and
	// inbox counters, and at each scrape the state of its agents,
	// toolings and cluster; a reload drops the series of what it removes.
	Metrics bool
	// ToolingOptions apply to every MCP tooling the daemon makes,
	// including those a reload adds.
	ToolingOptions mcpclient.Options
	// ReadyGate, if set, makes Serve tell systemd READY=1 only once it is
	// closed as well (the control socket listens), besides every agent
	// having started.
	ReadyGate <-chan struct{}
	// EpochTick is the engine's epoch tick (engine.Options.EpochTick).
	EpochTick time.Duration
	// FenceOverrun is what happens when a fence did not stop the agents
	// in time (cluster.Options.Overrun); serve exits the process.
	FenceOverrun func()
	// Version is toolhostd's version, as the MCP handshake and A2A cards
	// name it.
	Version string
}

// Daemon runs the agents and toolings of one config.
type Daemon struct {
	cfgPath string
	log     *zap.Logger
	opts    Options
	// g is the graph, built by system.NewServe: audit, providers,
	// toolings, hub, host, the supervisor of the agents, the router, the
	// endpoints, metrics and the cluster's pieces.
	g      *system.ServeGraph
	notify *notifier

	// opMu serialises Reload, the agent operations and the shutdown.
	opMu sync.Mutex

	tools *toolingMonitor // the toolings' sessions as they were seen

	mu     sync.Mutex
	cfg    *config.Config
	served bool

	cluster *clusterState // [cluster]; nil: a single host (cluster.go)

	close func() error // closes g, once (Close)
}

// New builds the daemon for cfg (read from cfgPath, which Reload reads
// again): the toolings (not connected yet), the gateway hub and the host with
// its engine (fuel metering on when some agent has limits.fuel > 0).
// Nothing runs until Serve; Close releases a daemon that is never served.
func New(cfgPath string, cfg *config.Config, opts Options) (*Daemon, error) {
	if cfg == nil {
		return nil, errors.New("daemon: no config")
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	log := opts.Log // un-named, for the toolings and the other parts
	if err := checkThreads(cfg, maxThreads(cfg)); err != nil {
		return nil, err
	}
	raiseMaxThreads(maxThreads(cfg))
	d := &Daemon{
		cfgPath: cfgPath,
		log:     log.Named("daemon"),
		cfg:     cfg,
		tools:   &toolingMonitor{recs: map[string]*toolingRec{}},
		notify:  newNotifier(log.Named("systemd")),
		opts:    opts,
	}
	d.close = sync.OnceValue(func() error { return d.g.Close() })
	o := system.ServeOptions{
		Options: system.Options{Log: log, ToolingOptions: d.opts.ToolingOptions, EpochTick: d.opts.EpochTick, Version: d.opts.Version},
		Metrics: d.opts.Metrics, Source: d, // read at scrape time, once d serves
		Backend: d,
	}
	if cfg.Cluster != nil {
		d.cluster = &clusterState{}
		d.cluster.placed.Store(d.placementOf(cfg))
		o.Runner, o.FenceOverrun = clusterRunner{d}, d.opts.FenceOverrun
		o.Placement = func() cluster.Placement { return *d.cluster.placed.Load() }
	}
	g, err := system.NewServe(cfg, o)
	if err != nil {
		return nil, err
	}
	d.g = g
	for name, t := range g.Toolings {
		d.tools.put(name, &toolingRec{cfg: cfg.Tooling[name], t: t})
	}
	return d, nil
}

// Metrics are the daemon's metrics (nil without Options.Metrics).
func (d *Daemon) Metrics() *metrics.Metrics { return d.g.Metrics }

// makeToolings builds a tooling per config entry (Reload's additions),
// as New's are built.
func (d *Daemon) makeToolings(cfgs map[string]*config.Tooling) (map[string]*toolingRec, error) {
	ts, err := d.g.MakeToolings(cfgs)
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
	root.Add(&hubService{hub: d.g.Hub, done: hubDone})

	d.opMu.Lock()
	names := d.g.Agents.Names()
	if d.clustered() {
		names = d.onEveryHost(names) // per-session agents; the cluster node starts those placed here
	}
	d.g.Agents.Run(root, names)
	d.opMu.Unlock()

	auditCtx, stopAudit := context.WithCancel(context.Background())
	auditDone := d.g.RunAudit(auditCtx)
	defer func() { stopAudit(); <-auditDone }()
	rootCtx, stopRoot := context.WithCancel(context.Background())
	defer stopRoot()
	rootDone := root.ServeBackground(rootCtx)
	d.runCluster()
	d.g.Endpoints.Serve()

	monCtx, stopMon := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	bg.Go(func() { d.tools.run(monCtx) })
	bg.Go(func() { d.notify.watchdog(monCtx) })
	bg.Go(func() { d.announceReady(monCtx) })

	<-ctx.Done()
	d.log.Info("shutting down")
	d.notify.send("STOPPING=1")
	stopMon()
	bg.Wait()
	d.g.Endpoints.Close()
	d.stopCluster()
	d.shutdown(root, stopRoot, rootDone, hubDone)
	return nil
}

// announceReady tells systemd READY=1 once the daemon is Ready (every
// agent started or failed to, every tooling connected once), as /readyz
// reports it, and the ready gate (the control socket) is open.
func (d *Daemon) announceReady(ctx context.Context) {
	select {
	case <-d.g.Agents.Started():
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
	if g := d.opts.ReadyGate; g != nil {
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
	d.g.Agents.Shutdown()
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
	d.g.Agents.Detach()
	d.log.Info("stopped")
}

// Close releases the engine and the key-value store (after every agent
// stopped: Serve's shutdown comes first), then the cluster's etcd client.
// Serve calls it when it returns; call it only for a daemon that is never
// served.
func (d *Daemon) Close() error {
	return d.close()
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
