package metrics

import "github.com/prometheus/client_golang/prometheus"

// toolingSeries are the tooling subsystem's series: tool calls with their
// latency, and failed re-subscriptions, by tooling.
type toolingSeries struct {
	calls       *prometheus.CounterVec
	callSeconds *prometheus.HistogramVec
	resubFailed *prometheus.CounterVec
}

// newToolingSeries makes the tooling series, unregistered.
func newToolingSeries() toolingSeries {
	return toolingSeries{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "tooling", Name: "calls_total",
			Help: "Tool calls by tooling, tool and outcome (ok, tool_error for an isError result, else the error code).",
		}, []string{"tooling", "tool", "outcome"}),
		callSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "tooling", Name: "call_duration_seconds",
			Help:    "Tool call latency by tooling and tool, whatever the outcome.",
			Buckets: prometheus.ExponentialBucketsRange(0.0001, 60, 15),
		}, []string{"tooling", "tool"}),
		resubFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "tooling", Name: "resubscribe_failures_total",
			Help: "Subscriptions that could not be made again after a reconnect, by tooling.",
		}, []string{"tooling"}),
	}
}

// pumpSeries are the pump subsystem's series: resource reads and the
// notifications received, by tooling.
type pumpSeries struct {
	reads       *prometheus.CounterVec
	updates     *prometheus.CounterVec
	listChanges *prometheus.CounterVec
}

// newPumpSeries makes the pump series, unregistered.
func newPumpSeries() pumpSeries {
	return pumpSeries{
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
	}
}

// agentSeries are the agent subsystem's series the daemon's hooks feed:
// traps, instantiation time and dropped log lines, by agent.
type agentSeries struct {
	traps       *prometheus.CounterVec
	instantiate *prometheus.HistogramVec
	logDropped  *prometheus.CounterVec
}

// newAgentSeries makes the agent series, unregistered.
func newAgentSeries() agentSeries {
	return agentSeries{
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
	}
}
