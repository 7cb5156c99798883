// Package metrics is toolhostd's Prometheus instrumentation: its own
// registry (with the Go and process collectors), a decorator that counts a
// Tooling's calls, reads and notifications without touching package tooling,
// a collector that reads agent and tooling state from the control Backend at
// scrape time, and small hooks for the agent events the daemon sees (traps,
// instantiation), for its inboxes' counters and for the key-value store.
package metrics

import (
	"sort"
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

	tooling toolingSeries // series.go
	pump    pumpSeries    // series.go
	agent   agentSeries   // series.go
	pol     policySeries  // policy.go
	chat    chatSeries    // chat.go
	message messageSeries // messages.go
	kv      kvCollector   // kv.go
	replay  replaySeries  // oplog.go

	state   *stateCollector
	inboxes inboxSources
}

// inboxSources are the agents' inboxes the scrapes read, by agent.
type inboxSources struct {
	mu      sync.Mutex
	byAgent map[string]*inboxSource
}

// inboxSource is an agent's current inbox plus the counts of the inboxes
// it had before (an agent gets a new inbox at each start).
type inboxSource struct {
	stats                func() inbox.Stats
	coalesced, delivered uint64 // from earlier inboxes
}

// inboxCounts are one agent's inbox counts at a scrape.
type inboxCounts struct {
	agent                string
	coalesced, delivered uint64
}

// set makes stats the agent's current inbox, keeping the counts of the
// one it replaces.
func (s *inboxSources) set(agent string, stats func() inbox.Stats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	src := s.byAgent[agent]
	if src == nil {
		src = &inboxSource{}
		s.byAgent[agent] = src
	}
	if src.stats != nil {
		st := src.stats()
		src.coalesced += st.Coalesced
		src.delivered += st.Delivered
	}
	src.stats = stats
}

// forget drops the agent's inboxes.
func (s *inboxSources) forget(agent string) {
	s.mu.Lock()
	delete(s.byAgent, agent)
	s.mu.Unlock()
}

// counts are every agent's inbox counts now, by agent name.
func (s *inboxSources) counts() []inboxCounts {
	s.mu.Lock()
	list := make([]inboxCounts, 0, len(s.byAgent))
	for name, src := range s.byAgent {
		n := inboxCounts{agent: name, coalesced: src.coalesced, delivered: src.delivered}
		if src.stats != nil {
			st := src.stats()
			n.coalesced += st.Coalesced
			n.delivered += st.Delivered
		}
		list = append(list, n)
	}
	s.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].agent < list[j].agent })
	return list
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
		reg:     prometheus.NewRegistry(),
		tooling: newToolingSeries(),
		pump:    newPumpSeries(),
		agent:   newAgentSeries(),
		inboxes: inboxSources{byAgent: map[string]*inboxSource{}},
	}
	m.state = &stateCollector{m: m, source: o.Source}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.tooling.calls, m.tooling.callSeconds, m.pump.reads, m.pump.updates, m.pump.listChanges, m.tooling.resubFailed,
		m.agent.traps, m.agent.instantiate, m.agent.logDropped, m.state, clusterCollector{m.state}, oplogCollector{m.state}, &m.kv,
	)
	return m
}

// Registry is the registry to serve (control.Options.Gatherer) or to add
// collectors to.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// AgentInstantiated records that the agent's component was instantiated,
// taking d.
func (m *Metrics) AgentInstantiated(agent string, d time.Duration) {
	m.agent.instantiate.WithLabelValues(agent).Observe(d.Seconds())
}

// AgentTrapped records that one run of the agent ended in a trap.
func (m *Metrics) AgentTrapped(agent string) {
	m.agent.traps.WithLabelValues(agent).Inc()
}

// AgentLogDropped records that one guest log line of the agent was
// dropped over its rate limit.
func (m *Metrics) AgentLogDropped(agent string) {
	m.agent.logDropped.WithLabelValues(agent).Inc()
}

// AgentInbox makes scrapes report the coalesced updates and the deliveries
// of the agent's inbox through stats (inbox.(*Inbox).Stats). Call it with
// each new inbox of the agent: the counts of the one it replaces are kept,
// so the counters never go down.
func (m *Metrics) AgentInbox(agent string, stats func() inbox.Stats) {
	m.inboxes.set(agent, stats)
}

// ForgetAgent drops every series of an agent that is no longer configured.
func (m *Metrics) ForgetAgent(agent string) {
	m.inboxes.forget(agent)
	l := prometheus.Labels{"agent": agent}
	m.agent.traps.DeletePartialMatch(l)
	m.agent.instantiate.DeletePartialMatch(l)
	m.agent.logDropped.DeletePartialMatch(l)
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
	}{m.tooling.calls, m.tooling.callSeconds, m.pump.reads, m.pump.updates, m.pump.listChanges, m.tooling.resubFailed} {
		v.DeletePartialMatch(l)
	}
	m.forgetPolicy(l)
}
