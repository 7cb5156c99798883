package system

import (
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/cluster"
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/dispatch"
	"github.com/toolhostd/toolhostd/internal/endpoints"
	"github.com/toolhostd/toolhostd/internal/forward"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/idem"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/metrics"
	"github.com/toolhostd/toolhostd/internal/peer"
	"github.com/toolhostd/toolhostd/internal/policy"
	"github.com/toolhostd/toolhostd/internal/supervisor"
)

// ServeOptions say what NewServe builds beyond the config, and give it
// what only the daemon that serves the graph has: the cluster node's
// runner, what it places, and the metrics' source, each read once the
// graph serves.
type ServeOptions struct {
	// Options are New's. NewServe sets their Metrics and, on a
	// cluster host, their Cluster.
	Options
	// Metrics builds the metrics (ServeGraph.Metrics), read from Source at
	// each scrape.
	Metrics bool
	Source  metrics.Source
	// Runner starts and stops the agents the cluster node places here;
	// Placement is what it places. Both are used with [cluster] only.
	Runner    cluster.Runner
	Placement func() cluster.Placement
	// FenceOverrun is cluster.Options.Overrun.
	FenceOverrun func()
	// Backend is the control API's backend (the daemon that serves the
	// graph); nil: no control server.
	Backend control.Backend
}

// ServeGraph is the graph of `toolhostd serve`: New's, and the cluster's
// etcd client, node, forwarder and idempotency ledger, the agents'
// supervisor, the message router over its dispatcher, and the MCP and A2A
// endpoints. Its fields are set by NewServe and not changed afterwards.
type ServeGraph struct {
	*System
	// Metrics are the metrics; nil without ServeOptions.Metrics.
	Metrics *metrics.Metrics
	// Cluster is the cluster's part; nil without [cluster].
	Cluster *ClusterParts
	// Agents are the configured agents.
	Agents *supervisor.Supervisor
	// Router is the one path of every message.
	Router *message.Router
	// Endpoints are the MCP and A2A endpoints and the peers.
	Endpoints *endpoints.Endpoints
	// Control is the control API as [host] says (control_socket,
	// control_listen, control_token), over ServeOptions.Backend: not
	// listening yet (the caller serves it); nil without a Backend.
	Control *control.Server
}

// ClusterParts are a cluster host's pieces of the graph.
type ClusterParts struct {
	Etcd *clientv3.Client // connected lazily: no request at NewServe
	Node *cluster.Node
	// Forwarder forwards messages to the other hosts; nil without a
	// [host] control_token.
	Forwarder *forward.Forwarder
	// Ledger keeps the router's idempotency keys in etcd.
	Ledger *idem.Ledger
	// Config is [cluster] as started: a reload does not change it.
	Config config.Cluster
}

// NewServe builds the graph of serve for cfg, in dependency order: the
// cluster's client, forwarder and node (with [cluster]), the metrics, the
// common graph (New) on them, the supervisor, the router with its ledger
// and dispatcher, the endpoints, the control server. Close takes it down
// in reverse. A control server the config's [host] does not allow is a
// ControlError.
func NewServe(cfg *config.Config, o ServeOptions) (g *ServeGraph, err error) {
	if cfg == nil {
		return nil, errors.New("system: no config")
	}
	log := o.Log
	if log == nil {
		log = zap.NewNop()
	}
	g = &ServeGraph{}
	defer func() {
		if err != nil {
			_ = g.Close()
			g = nil
		}
	}()
	if cfg.Cluster != nil {
		if g.Cluster, err = newCluster(cfg, o, log); err != nil {
			return g, err
		}
	}
	so := o.Options
	if o.Metrics {
		g.Metrics = metrics.New(metrics.Options{Source: o.Source})
		so.Metrics = g.Metrics
	}
	if c := g.Cluster; c != nil {
		so.Cluster = ClusterStores{Client: c.Etcd, OplogGuard: c.Node.WriteGuard, Member: c.Config.Name}
	}
	if g.System, err = New(cfg, so); err != nil {
		return g, err
	}
	sup := supervisor.Options{Host: g.Host, Log: log.Named("daemon"), Metrics: g.Metrics, Recorder: g.recorder(),
		Config: g.instanceConfig, Limit: g.Limit, Oplog: g.Oplog}
	if c := g.Cluster; c != nil {
		sup.Sessions = c.Node
	}
	if t := g.Tracing; t.On() {
		sup.Tracer = t.Provider()
	}
	g.Agents = supervisor.New(cfg.Agent, sup)
	if c := g.Cluster; c != nil { // idempotency keys across the hosts
		c.Ledger = idem.New(idem.Options{Client: c.Etcd, Prefix: c.Config.Prefix, Host: c.Config.Name,
			TTL: cfg.Host.MessageRetention.Duration, Timeout: c.Config.LeaseTTL.Duration / 2, Log: log})
	}
	g.Router = g.newRouter(cfg, log)
	if g.Endpoints, err = endpoints.New(endpoints.Options{Config: cfg, Router: g.Router, Version: o.Version, Log: log}); err != nil {
		return g, err
	}
	if o.Backend != nil {
		if g.Control, err = g.newControl(cfg, o.Backend, log); err != nil {
			return g, &ControlError{Err: err}
		}
	}
	return g, nil
}

// ControlError is NewServe's error when the config's [host] does not make
// a control server (control_listen without a control_token, a socket path
// too long).
type ControlError struct{ Err error }

func (e *ControlError) Error() string { return e.Err.Error() }
func (e *ControlError) Unwrap() error { return e.Err }

// newControl is the control API over b: its agents and toolings, the
// router's messages, the metrics, the recent traces and the key-value
// store.
func (g *ServeGraph) newControl(cfg *config.Config, b control.Backend, log *zap.Logger) (*control.Server, error) {
	h := cfg.Host
	o := control.Options{Backend: b, Messages: g.Router, Socket: h.ControlSocket, Listen: h.ControlListen, Token: h.ControlToken, Log: log}
	if g.Metrics != nil {
		o.Gatherer = g.Metrics.Registry()
	}
	if t := g.Tracing.Recent(); t != nil {
		o.Traces = t
	}
	if g.KV != nil {
		o.KV = g.KV // not a nil *kv.Service in the interface: without a store /v1/kv answers 404
	}
	return control.NewServer(o)
}

// newCluster makes the etcd client (no request yet), the forwarder and the
// node of a config with [cluster].
func newCluster(cfg *config.Config, o ServeOptions, log *zap.Logger) (*ClusterParts, error) {
	c := cfg.Cluster
	ccfg, err := cluster.ClientConfig(c, log)
	if err != nil {
		return nil, err
	}
	address, fwd, err := newForwarder(cfg, log)
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(ccfg)
	if err != nil {
		closeForwarder(fwd)
		return nil, fmt.Errorf("cluster: etcd client: %w", err)
	}
	node, err := cluster.New(cluster.Options{
		Client: cli, Runner: o.Runner, Log: log,
		Name: c.Name, Prefix: c.Prefix, LeaseTTL: c.LeaseTTL.Duration,
		Settle: c.Settle.Duration, MovesPerSecond: c.MovesPerSecond,
		Placement: o.Placement, Overrun: o.FenceOverrun, Address: address,
	})
	if err != nil {
		closeForwarder(fwd)
		_ = cli.Close()
		return nil, err
	}
	return &ClusterParts{Etcd: cli, Node: node, Forwarder: fwd, Config: *c}, nil
}

// newForwarder is the control API address this host publishes to the
// others and the forwarder of the messages for the agents they run (nil
// without a control token: the hosts authenticate to each other with it).
func newForwarder(cfg *config.Config, log *zap.Logger) (address string, fwd *forward.Forwarder, err error) {
	c := cfg.Cluster
	address, err = c.AdvertiseURL(cfg.Host.ControlListen)
	if err != nil {
		return "", nil, fmt.Errorf("cluster: %w", err)
	}
	clog := log.Named("daemon").Named("cluster")
	if address == "" {
		clog.Warn("this host publishes no control API address: messages the other hosts receive for its agents fail unavailable; "+
			"set [cluster] advertise, or [host] control_listen to an address the other hosts can reach",
			zap.String("control_listen", cfg.Host.ControlListen))
	}
	token, err := config.Expand(cfg.Host.ControlToken)
	if err != nil {
		return "", nil, fmt.Errorf("cluster: control_token: %w", err)
	}
	if token == "" {
		clog.Warn("no [host] control_token: this host cannot forward messages for agents the other hosts run (they fail unavailable); " +
			"the hosts of a cluster authenticate to each other with the shared control_token")
		return address, nil, nil
	}
	return address, forward.New(forward.Options{Self: c.Name, Token: token, Log: log}), nil
}

func closeForwarder(f *forward.Forwarder) {
	if f != nil {
		_ = f.Close()
	}
}

// newRouter is the router of the graph's messages, over the dispatcher of
// its agents; in a cluster its idempotency keys are in the ledger.
func (g *ServeGraph) newRouter(cfg *config.Config, log *zap.Logger) *message.Router {
	o := message.Options{Retention: cfg.Host.MessageRetention.Duration, Audit: g.Audit, Log: log}
	if t := g.Tracing; t.On() {
		o.Tracer, o.CaptureContent = t.Provider(), t.CaptureContent()
	}
	if m := g.Metrics; m != nil {
		o.Observe = func(r message.Record) {
			m.ObserveMessage(metrics.Message{Agent: r.Agent, Sender: r.Sender, Outcome: r.Outcome, Duration: r.Duration,
				FirstDelta: r.FirstDelta, HasFirstDelta: r.HasFirstDelta, Refused: r.Refused})
		}
	}
	do := dispatch.Options{Agents: g.Agents, Peer: g.peer}
	if c := g.Cluster; c != nil {
		o.Ledger = c.Ledger
		do.Node, do.Forwarder = c.Node, c.Forwarder
	}
	return message.NewRouter(dispatch.New(do), o)
}

// peer is the [peer.<name>] of that name, if configured (the dispatcher
// asks it once NewServe made the endpoints).
func (g *ServeGraph) peer(name string) (*peer.Peer, bool) {
	if g.Endpoints == nil {
		return nil, false
	}
	return g.Endpoints.Peer(name)
}

// recorder is the metrics as the policy's recorder (nil without).
func (g *ServeGraph) recorder() policy.Recorder {
	if m := g.Metrics; m != nil {
		return m
	}
	return nil
}

// instanceConfig is the host.AgentConfig of an instance the supervisor
// starts: the system's, its messages sent through the router.
func (g *ServeGraph) instanceConfig(in supervisor.Instance) host.AgentConfig {
	c := g.AgentConfig(Agent{
		Name: in.Agent, Config: in.Config, Session: in.Session, Env: in.Env, Policy: in.Policy,
		Limit: in.Limit, Messaging: g.messaging(in.Config),
	})
	c.Limits.StopGrace = g.StopGrace(c.Limits.StopGrace)
	return c
}

// StopGrace is an agent's effective stop grace: in a cluster at most the
// node's stop budget (see the cluster package's guarantee).
func (g *ServeGraph) StopGrace(d time.Duration) time.Duration {
	if g.Cluster == nil {
		return d
	}
	return min(d, cluster.StopBudget(g.Cluster.Config.LeaseTTL.Duration))
}

// messaging is how an instance of the agent a sends messages.
func (g *ServeGraph) messaging(a *config.Agent) contract.Messaging {
	globs := make([]policy.Pattern, len(a.SendsTo))
	for i, p := range a.SendsTo {
		globs[i] = policy.Compile(p)
	}
	return contract.Messaging{
		Router: g.Router,
		SendsTo: func(to string) bool {
			for _, p := range globs {
				if p.Match(to) {
					return true
				}
			}
			return false
		},
		AuditContent: a.AuditArguments,
	}
}

// Close takes the graph down in the reverse order of NewServe: the
// endpoints, the common graph, then the cluster's forwarded streams,
// ledger (its writes in flight end first) and etcd client. The node is
// the daemon's to stop (it leaves the cluster) before.
func (g *ServeGraph) Close() error {
	if g.Endpoints != nil {
		g.Endpoints.Close()
	}
	var err error
	if g.System != nil {
		err = g.System.Close()
	}
	if c := g.Cluster; c != nil {
		closeForwarder(c.Forwarder)
		if c.Ledger != nil {
			c.Ledger.Close()
		}
		_ = c.Etcd.Close()
	}
	return err
}
