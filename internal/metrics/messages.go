package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Message is one message to an agent that ended, or was refused.
type Message struct {
	Agent, Sender string
	// Outcome is OutcomeOK or the error code (reply-error for the
	// agent's own, cancelled, unavailable, or a refusal's code).
	Outcome string
	// Duration is from acceptance to the end of the reply; FirstDelta to
	// its first delta (HasFirstDelta: the reply had one). Zero for a
	// refused message.
	Duration, FirstDelta time.Duration
	HasFirstDelta        bool
	Refused              bool
}

// messageSeries are the message and instance series, registered with
// the first use.
type messageSeries struct {
	once     sync.Once
	messages *prometheus.CounterVec
	first    *prometheus.HistogramVec
	reply    *prometheus.HistogramVec
	started  *prometheus.CounterVec
	idle     *prometheus.CounterVec
	live     *prometheus.GaugeVec
}

func (m *Metrics) msgs() *messageSeries {
	s := &m.message
	s.once.Do(func() {
		s.messages = counterVec("agent", "messages_total",
			"Messages to agents by agent, sender kind (api, mcp, a2a, agent) and outcome (ok, or the error code: reply-error, cancelled, unavailable, busy, denied, ...).",
			"agent", "sender", "outcome")
		s.first = histogramVec("agent", "message_first_delta_seconds",
			"Time from a message's acceptance to the first delta of its reply, by agent.",
			prometheus.ExponentialBucketsRange(0.0005, 120, 15), "agent")
		s.reply = histogramVec("agent", "message_reply_seconds",
			"Time from a message's acceptance to the end of its reply, whatever the outcome, by agent.",
			prometheus.ExponentialBucketsRange(0.0005, 600, 15), "agent")
		s.started = counterVec("agent", "instances_started_total",
			"Instances started for messages (a per-session agent's, an on-message agent's), by agent.",
			"agent")
		s.idle = counterVec("agent", "instances_stopped_idle_total",
			"Instances stopped after their idle_timeout with nothing to do, by agent.",
			"agent")
		s.live = prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "agent", Name: "instances",
			Help: "Live instances of an agent (a per-session agent's, one per session).",
		}, []string{"agent"})
		m.reg.MustRegister(s.messages, s.first, s.reply, s.started, s.idle, s.live)
	})
	return s
}

// senderKind is the sender's label: "agent" for every "agent:NAME".
func senderKind(sender string) string {
	if len(sender) > 6 && sender[:6] == "agent:" {
		return "agent"
	}
	return sender
}

// ObserveMessage records one message that ended or was refused.
func (m *Metrics) ObserveMessage(msg Message) {
	s := m.msgs()
	s.messages.WithLabelValues(msg.Agent, senderKind(msg.Sender), msg.Outcome).Inc()
	if msg.Refused {
		return
	}
	if msg.HasFirstDelta {
		s.first.WithLabelValues(msg.Agent).Observe(msg.FirstDelta.Seconds())
	}
	s.reply.WithLabelValues(msg.Agent).Observe(msg.Duration.Seconds())
}

// InstanceStarted counts an instance started for messages.
func (m *Metrics) InstanceStarted(agent string) {
	s := m.msgs()
	s.started.WithLabelValues(agent).Inc()
	s.live.WithLabelValues(agent).Inc()
}

// InstanceEnded counts an instance started for messages that ended, idle
// when it was stopped for its idle timeout.
func (m *Metrics) InstanceEnded(agent string, idle bool) {
	s := m.msgs()
	s.live.WithLabelValues(agent).Dec()
	if idle {
		s.idle.WithLabelValues(agent).Inc()
	}
}

// forgetMessages drops an agent's message and instance series.
func (m *Metrics) forgetMessages(agent string) {
	s := m.msgs()
	l := prometheus.Labels{"agent": agent}
	for _, v := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{s.messages, s.first, s.reply, s.started, s.idle, s.live} {
		v.DeletePartialMatch(l)
	}
}
