package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// maxModelLabels bounds the distinct model label values (a guest may ask
// for any name); further names count as OtherModel.
const maxModelLabels = 64

// OtherModel is the model label of requests past maxModelLabels distinct
// names; DefaultModel that of a failed request that named none.
const (
	OtherModel   = "_other"
	DefaultModel = "_default"
)

// Chat is one finished model request (chat or chat-stream) of an agent.
type Chat struct {
	Agent, Provider string
	// Model is the model that answered, else the one asked for.
	Model string
	// Outcome is OutcomeOK or the contract's error code.
	Outcome string
	// Duration is the whole request; FirstToken the time to its first
	// delta (HasFirstToken: a stream that had one).
	Duration, FirstToken time.Duration
	HasFirstToken        bool
	// InputTokens and OutputTokens are the usage the provider reported.
	InputTokens, OutputTokens uint32
}

// chatSeries are the model request series, registered with the first use.
type chatSeries struct {
	once     sync.Once
	tokens   *prometheus.CounterVec
	requests *prometheus.CounterVec
	first    *prometheus.HistogramVec
	total    *prometheus.HistogramVec

	mu     sync.Mutex
	models map[string]struct{}
}

func (m *Metrics) chats() *chatSeries {
	c := &m.chat
	c.once.Do(func() {
		c.tokens = counterVec("provider", "tokens_total",
			"Model tokens by agent, provider, model and direction (input, output), from the usage providers report.",
			"agent", "provider", "model", "direction")
		c.requests = counterVec("provider", "requests_total",
			"Model requests (chat and chat-stream) by agent, provider, model and outcome (ok or the error code).",
			"agent", "provider", "model", "outcome")
		c.first = histogramVec("provider", "first_token_seconds",
			"Time from a chat-stream request to its first delta, by provider and model.",
			prometheus.ExponentialBucketsRange(0.001, 120, 15), "provider", "model")
		c.total = histogramVec("provider", "request_duration_seconds",
			"Time from a model request to its end, whatever the outcome, by provider and model.",
			prometheus.ExponentialBucketsRange(0.001, 600, 15), "provider", "model")
		c.models = map[string]struct{}{}
		m.reg.MustRegister(c.tokens, c.requests, c.first, c.total)
	})
	return c
}

// modelLabel is model, DefaultModel for "", or OtherModel once
// maxModelLabels names are in use.
func (c *chatSeries) modelLabel(model string) string {
	if model == "" {
		return DefaultModel
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.models[model]; ok {
		return model
	}
	if len(c.models) >= maxModelLabels {
		return OtherModel
	}
	c.models[model] = struct{}{}
	return model
}

// ObserveChat records one finished model request.
func (m *Metrics) ObserveChat(ch Chat) {
	c := m.chats()
	model := c.modelLabel(ch.Model)
	c.requests.WithLabelValues(ch.Agent, ch.Provider, model, ch.Outcome).Inc()
	if ch.InputTokens > 0 || ch.OutputTokens > 0 {
		c.tokens.WithLabelValues(ch.Agent, ch.Provider, model, "input").Add(float64(ch.InputTokens))
		c.tokens.WithLabelValues(ch.Agent, ch.Provider, model, "output").Add(float64(ch.OutputTokens))
	}
	if ch.HasFirstToken {
		c.first.WithLabelValues(ch.Provider, model).Observe(ch.FirstToken.Seconds())
	}
	c.total.WithLabelValues(ch.Provider, model).Observe(ch.Duration.Seconds())
}

// forgetChat drops the model request series matching l.
func (m *Metrics) forgetChat(l prometheus.Labels) {
	c := m.chats()
	for _, v := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{c.tokens, c.requests, c.first, c.total} {
		v.DeletePartialMatch(l)
	}
}

// ForgetProvider drops every series of a provider that is no longer
// configured.
func (m *Metrics) ForgetProvider(name string) { m.forgetChat(prometheus.Labels{"provider": name}) }
