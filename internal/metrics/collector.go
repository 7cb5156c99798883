package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolhostd/toolhostd/internal/status"
)

// AgentStates are the states toolhostd_agent_state reports (one series per
// state, 1 for the current one). A state outside the list is reported too.
var AgentStates = []string{"starting", "running", "stopping", "stopped", "exited", "failed", "backoff"}

func desc(subsystem, name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, subsystem, name), help, labels, nil)
}

// counterVec is a counter of the namespace's subsystem, unregistered.
func counterVec(subsystem, name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help}, labels)
}

// histogramVec is a histogram of the namespace's subsystem, unregistered.
func histogramVec(subsystem, name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help, Buckets: buckets}, labels)
}

var (
	descAgentState     = desc("agent", "state", "1 for the agent's current state, 0 for the others.", "agent", "state")
	descAgentRestarts  = desc("agent", "restarts_total", "Times the agent was restarted.", "agent")
	descAgentInbox     = desc("agent", "inbox_depth", "Envelopes waiting in the agent's inbox.", "agent")
	descCoalesced      = desc("agent", "coalesced_updates_total", "Resource updates that replaced an undelivered one in the agent's inbox.", "agent")
	descDeliveries     = desc("agent", "deliveries_total", "Envelopes the agent received from its inbox (results, errors, updates, shutdown).", "agent")
	descConnected      = desc("tooling", "connected", "1 while the tooling has a live MCP session.", "tooling")
	descInFlight       = desc("tooling", "in_flight", "MCP requests in flight on the tooling's session.", "tooling")
	descToolingRestart = desc("tooling", "session_restarts_total", "Reconnection attempts of the tooling's session.", "tooling")
	descTools          = desc("tooling", "tools", "Tools the tooling's server offers.", "tooling")
	descProgress       = desc("tooling", "progress_notifications_total", "Progress notifications the tooling's server sent about tool calls.", "tooling")
)

// Source is what scrapes read the agents' and toolings' states from: the
// daemon (a control.Backend is one). If it also has Cluster, as a
// control.ClusterBackend does, the cluster's series come from it; if it
// is an OplogSource, the oplog store's (oplog.go).
type Source interface {
	Agents() []status.Agent
	Toolings() []status.Tooling
}

// clusterSource is a Source that may be a cluster host.
type clusterSource interface {
	Cluster() (st status.Cluster, ok bool)
}

// stateCollector reads the Source's agents and toolings, and the inboxes'
// counters, at scrape time.
type stateCollector struct {
	m      *Metrics
	source Source // nil: none
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descAgentState, descAgentRestarts, descAgentInbox, descCoalesced,
		descDeliveries, descConnected, descInFlight, descToolingRestart, descTools, descProgress} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	if c.source != nil {
		for _, a := range c.source.Agents() {
			known := false
			for _, s := range AgentStates {
				v := 0.0
				if s == a.State {
					v, known = 1, true
				}
				ch <- prometheus.MustNewConstMetric(descAgentState, prometheus.GaugeValue, v, a.Name, s)
			}
			if !known && a.State != "" {
				ch <- prometheus.MustNewConstMetric(descAgentState, prometheus.GaugeValue, 1, a.Name, a.State)
			}
			ch <- prometheus.MustNewConstMetric(descAgentRestarts, prometheus.CounterValue, float64(a.Restarts), a.Name)
			ch <- prometheus.MustNewConstMetric(descAgentInbox, prometheus.GaugeValue, float64(a.Inbox), a.Name)
		}
		for _, t := range c.source.Toolings() {
			connected := 0.0
			if t.State == "connected" {
				connected = 1
			}
			ch <- prometheus.MustNewConstMetric(descConnected, prometheus.GaugeValue, connected, t.Name)
			ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(t.InFlight), t.Name)
			ch <- prometheus.MustNewConstMetric(descToolingRestart, prometheus.CounterValue, float64(t.Restarts), t.Name)
			ch <- prometheus.MustNewConstMetric(descTools, prometheus.GaugeValue, float64(t.Tools), t.Name)
			ch <- prometheus.MustNewConstMetric(descProgress, prometheus.CounterValue, float64(t.Progress), t.Name)
		}
	}
	for _, n := range c.m.inboxes.counts() {
		ch <- prometheus.MustNewConstMetric(descCoalesced, prometheus.CounterValue, float64(n.coalesced), n.agent)
		ch <- prometheus.MustNewConstMetric(descDeliveries, prometheus.CounterValue, float64(n.delivered), n.agent)
	}
}
