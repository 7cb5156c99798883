package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// policySeries are the least-privilege series: denials, refusals over a
// limit, and the audit lines a full buffer dropped. They are registered
// with the first use (policy.Recorder, AuditLog).
type policySeries struct {
	once    sync.Once
	denied  *prometheus.CounterVec
	limited *prometheus.CounterVec
}

func (m *Metrics) policy() *policySeries {
	p := &m.pol
	p.once.Do(func() {
		p.denied = counterVec("policy", "denied_total",
			"Operations an agent's grant denied, by agent, tooling and op.",
			"agent", "tooling", "op")
		p.limited = counterVec("agent", "limited_total",
			"Tool calls refused with busy over an agent's grant limit (max_concurrent_calls, calls_per_second).",
			"agent", "tooling", "limit")
		m.reg.MustRegister(p.denied, p.limited)
	})
	return p
}

// PolicyDenied counts an operation the agent's grant denied
// (policy.Recorder).
func (m *Metrics) PolicyDenied(agent, tooling, op string) {
	m.policy().denied.WithLabelValues(agent, tooling, op).Inc()
}

// AgentLimited counts a call refused over a grant limit (policy.Recorder).
func (m *Metrics) AgentLimited(agent, tooling, limit string) {
	m.policy().limited.WithLabelValues(agent, tooling, limit).Inc()
}

// AuditLog makes scrapes report how many audit lines were written and how
// many a full buffer dropped, through the two functions. Call it once.
func (m *Metrics) AuditLog(written, dropped func() int64) {
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "toolhostd_audit_lines_total",
			Help: "Audit log lines written.",
		}, func() float64 { return float64(written()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "toolhostd_audit_dropped_total",
			Help: "Audit log lines dropped because the buffer was full (the call path never waits on the audit log).",
		}, func() float64 { return float64(dropped()) }),
	)
}

// Spans counts what tracing did with its spans: ended (sampled), taken
// by the collector, dropped because an export failed. Call it once.
type Spans interface {
	Ended() uint64
	Exported() uint64
	Dropped() uint64
}

// Traces makes scrapes report the host's spans (see Spans). Call it once.
func (m *Metrics) Traces(s Spans) {
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "toolhostd_trace_spans_total",
			Help: "Spans recorded (sampled and ended).",
		}, func() float64 { return float64(s.Ended()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "toolhostd_trace_spans_exported_total",
			Help: "Spans the OTLP collector took.",
		}, func() float64 { return float64(s.Exported()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "toolhostd_trace_spans_dropped_total",
			Help: "Spans dropped because their export failed (an unreachable or refusing collector); agents never wait on an export.",
		}, func() float64 { return float64(s.Dropped()) }),
	)
}

// forgetPolicy drops the policy series matching l.
func (m *Metrics) forgetPolicy(l prometheus.Labels) {
	p := m.policy()
	p.denied.DeletePartialMatch(l)
	p.limited.DeletePartialMatch(l)
}
