// Package metrics is toolhostd's Prometheus instrumentation: its own
// registry (with the Go and process collectors), a decorator that counts a
// Tooling's calls, reads and notifications without touching package tooling,
// a collector that reads agent and tooling state from the control Backend at
// scrape time, and small hooks for the agent events the daemon sees (traps,
// instantiation), for its inboxes' counters and for the key-value store.
package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/toolhostd/toolhostd/internal/inbox"
)

const namespace = "toolhostd"

// Outcomes of a call besides the contract's error codes
// (tooling.ErrorCode.String(), e.g. "timeout").
const (
	OutcomeOK        = "ok"
	OutcomeToolError = "tool_error" // a result with MCP isError true
)

// maxToolLabels bounds the distinct tool label values per tooling (a guest
// may call any name); further names count as OtherTool.
const maxToolLabels = 256

// OtherTool is the tool label of calls past maxToolLabels distinct names.
const OtherTool = "_other"

// Metrics holds toolhostd's metrics and their registry. Its methods are safe
// for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	calls       *prometheus.CounterVec
	callSeconds *prometheus.HistogramVec
	reads       *prometheus.CounterVec
	updates     *prometheus.CounterVec
	listChanges *prometheus.CounterVec
	resubFailed *prometheus.CounterVec
	traps       *prometheus.CounterVec
	instantiate *prometheus.HistogramVec
	logDropped  *prometheus.CounterVec
	pol         policySeries  // policy.go
	chat        chatSeries    // chat.go
	message     messageSeries // messages.go
	kv          kvCollector   // kv.go
	replay      replaySeries  // oplog.go

	state *stateCollector

	mu      sync.Mutex
	inboxes map[string]*inboxSource // by agent
}

// inboxSource is an agent's current inbox plus the counts of the inboxes
// it had before (an agent gets a new inbox at each start).
type inboxSource struct {
	stats                func() inbox.Stats
	coalesced, delivered uint64 // from earlier inboxes
}

// Options are what New builds the metrics with.
type Options struct {
	// Source is read at each scrape for the agents' and toolings' state
	// (and, if it is a cluster host, the cluster's); nil: none is reported.
	Source Source
}

// New builds the metrics on a fresh registry holding them, the Go runtime
// collector and the process collector.
func New(o Options) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "tooling", Name: "calls_total",
			Help: "Tool calls by tooling, tool and outcome (ok, tool_error for an isError result, else the error code).",
		}, []string{"tooling", "tool", "outcome"}),
		callSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "tooling", Name: "call_duration_seconds",
			Help:    "Tool call latency by tooling and tool, whatever the outcome.",
			Buckets: prometheus.ExponentialBucketsRange(0.0001, 60, 15),
		}, []string{"tooling", "tool"}),
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "pump", Name: "reads_total",
			Help: "Resource reads by tooling and outcome (ok or the error code).",
		}, []string{"tooling", "outcome"}),
		updates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "pump", Name: "updates_received_total",
			Help: "notifications/resources/updated received, by tooling.",
		}, []string{"tooling"}),
		listChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "pump", Name: "list_changes_received_total",
			Help: "notifications/resources/list_changed received, by tooling.",
		}, []string{"tooling"}),
		resubFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "tooling", Name: "resubscribe_failures_total",
			Help: "Subscriptions that could not be made again after a reconnect, by tooling.",
		}, []string{"tooling"}),
		traps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "agent", Name: "traps_total",
			Help: "Agent runs that ended in a trap, by agent.",
		}, []string{"agent"}),
		instantiate: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "agent", Name: "instantiate_duration_seconds",
			Help:    "Time to instantiate an agent's component (compile cache hit or miss included), by agent.",
			Buckets: prometheus.ExponentialBucketsRange(0.00001, 30, 15),
		}, []string{"agent"}),
		logDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "agent", Name: "log_lines_dropped_total",
			Help: "Guest log lines (log.write, stdout, stderr) dropped over the agent's limits.log_rate, by agent.",
		}, []string{"agent"}),
		inboxes: map[string]*inboxSource{},
	}
	m.state = &stateCollector{m: m, source: o.Source}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.calls, m.callSeconds, m.reads, m.updates, m.listChanges, m.resubFailed,
		m.traps, m.instantiate, m.logDropped, m.state, clusterCollector{m.state}, oplogCollector{m.state}, &m.kv,
	)
	return m
}

// Registry is the registry to serve (control.Options.Gatherer) or to add
// collectors to.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// AgentInstantiated records that the agent's component was instantiated,
// taking d.
func (m *Metrics) AgentInstantiated(agent string, d time.Duration) {
	m.instantiate.WithLabelValues(agent).Observe(d.Seconds())
}

// AgentTrapped records that one run of the agent ended in a trap.
func (m *Metrics) AgentTrapped(agent string) {
	m.traps.WithLabelValues(agent).Inc()
}

// AgentLogDropped records that one guest log line of the agent was
// dropped over its rate limit.
func (m *Metrics) AgentLogDropped(agent string) {
	m.logDropped.WithLabelValues(agent).Inc()
}

// AgentInbox makes scrapes report the coalesced updates and the deliveries
// of the agent's inbox through stats (inbox.(*Inbox).Stats). Call it with
// each new inbox of the agent: the counts of the one it replaces are kept,
// so the counters never go down.
func (m *Metrics) AgentInbox(agent string, stats func() inbox.Stats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	src := m.inboxes[agent]
	if src == nil {
		src = &inboxSource{}
		m.inboxes[agent] = src
	}
	if src.stats != nil {
		st := src.stats()
		src.coalesced += st.Coalesced
		src.delivered += st.Delivered
	}
	src.stats = stats
}

// ForgetAgent drops every series of an agent that is no longer configured.
func (m *Metrics) ForgetAgent(agent string) {
	m.mu.Lock()
	delete(m.inboxes, agent)
	m.mu.Unlock()
	l := prometheus.Labels{"agent": agent}
	m.traps.DeletePartialMatch(l)
	m.instantiate.DeletePartialMatch(l)
	m.logDropped.DeletePartialMatch(l)
	m.forgetPolicy(l)
	m.forgetChat(l)
	m.forgetMessages(agent)
	m.forgetReplays(l)
}

// ForgetTooling drops every series of a tooling that is no longer
// configured.
func (m *Metrics) ForgetTooling(name string) {
	l := prometheus.Labels{"tooling": name}
	for _, v := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{m.calls, m.callSeconds, m.reads, m.updates, m.listChanges, m.resubFailed} {
		v.DeletePartialMatch(l)
	}
	m.forgetPolicy(l)
}
