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
		calls: counterVec("tooling", "calls_total",
			"Tool calls by tooling, tool and outcome (ok, tool_error for an isError result, else the error code).",
			"tooling", "tool", "outcome"),
		callSeconds: histogramVec("tooling", "call_duration_seconds",
			"Tool call latency by tooling and tool, whatever the outcome.",
			prometheus.ExponentialBucketsRange(0.0001, 60, 15), "tooling", "tool"),
		resubFailed: counterVec("tooling", "resubscribe_failures_total",
			"Subscriptions that could not be made again after a reconnect, by tooling.",
			"tooling"),
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
		reads: counterVec("pump", "reads_total",
			"Resource reads by tooling and outcome (ok or the error code).",
			"tooling", "outcome"),
		updates: counterVec("pump", "updates_received_total",
			"notifications/resources/updated received, by tooling.",
			"tooling"),
		listChanges: counterVec("pump", "list_changes_received_total",
			"notifications/resources/list_changed received, by tooling.",
			"tooling"),
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
		traps: counterVec("agent", "traps_total",
			"Agent runs that ended in a trap, by agent.",
			"agent"),
		instantiate: histogramVec("agent", "instantiate_duration_seconds",
			"Time to instantiate an agent's component (compile cache hit or miss included), by agent.",
			prometheus.ExponentialBucketsRange(0.00001, 30, 15), "agent"),
		logDropped: counterVec("agent", "log_lines_dropped_total",
			"Guest log lines (log.write, stdout, stderr) dropped over the agent's limits.log_rate, by agent.",
			"agent"),
	}
}
