package metrics_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/metrics"
)

// TestObserveChat: tokens by agent, provider, model and direction;
// requests by outcome; the first-token histogram only for streams that had
// a delta; the duration histogram for every request; a failed request
// without a model under DefaultModel; ForgetAgent and ForgetProvider drop
// the series.
func TestObserveChat(t *testing.T) {
	m := metrics.New(metrics.Options{})
	for _, c := range []metrics.Chat{
		{Agent: "a", Provider: "oai", Model: "gpt-x", Outcome: "ok", Duration: time.Second, FirstToken: 100 * time.Millisecond, HasFirstToken: true, InputTokens: 10, OutputTokens: 5},
		{Agent: "a", Provider: "oai", Model: "gpt-x", Outcome: "ok", Duration: time.Second, InputTokens: 7, OutputTokens: 3},
		{Agent: "b", Provider: "oai", Model: "gpt-x", Outcome: "busy"},
		{Agent: "b", Provider: "ant", Outcome: "unavailable", Duration: time.Millisecond},
	} {
		m.ObserveChat(c)
	}
	f := families(t, m)
	const tokens, reqs = "toolhostd_provider_tokens_total", "toolhostd_provider_requests_total"
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{tokens, []string{"agent=a", "provider=oai", "model=gpt-x", "direction=input"}, 17},
		{tokens, []string{"agent=a", "provider=oai", "model=gpt-x", "direction=output"}, 8},
		{tokens, []string{"agent=b"}, -1},
		{reqs, []string{"agent=a", "outcome=ok"}, 2},
		{reqs, []string{"agent=b", "provider=oai", "outcome=busy"}, 1},
		{reqs, []string{"agent=b", "provider=ant", "model=" + metrics.DefaultModel, "outcome=unavailable"}, 1},
	} {
		if got := value(f, tc.name, tc.labels...); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	first := find(f, "toolhostd_provider_first_token_seconds", "provider=oai", "model=gpt-x")
	if first == nil || first.Histogram.GetSampleCount() != 1 || first.Histogram.GetSampleSum() != 0.1 {
		t.Errorf("first token histogram %v, want one sample of 0.1s", first)
	}
	total := find(f, "toolhostd_provider_request_duration_seconds", "provider=oai", "model=gpt-x")
	if total == nil || total.Histogram.GetSampleCount() != 3 {
		t.Errorf("duration histogram %v, want 3 samples", total)
	}
	m.ForgetAgent("a")
	m.ForgetProvider("ant")
	f = families(t, m)
	if value(f, tokens, "agent=a") != -1 || value(f, reqs, "provider=ant") != -1 || value(f, reqs, "agent=b", "provider=oai") != 1 {
		t.Error("Forget left series behind or dropped others'")
	}
}

// TestModelLabelCap: a guest naming ever new models does not grow the
// series without bound.
func TestModelLabelCap(t *testing.T) {
	m := metrics.New(metrics.Options{})
	for i := range 100 {
		m.ObserveChat(metrics.Chat{Agent: "a", Provider: "p", Model: fmt.Sprintf("m-%03d", i), Outcome: "not-found"})
	}
	f := families(t, m)
	const reqs = "toolhostd_provider_requests_total"
	if n := len(f[reqs].GetMetric()); n != 65 {
		t.Errorf("%d series, want 64 models and %s", n, metrics.OtherModel)
	}
	if got := value(f, reqs, "model="+metrics.OtherModel); got != 36 {
		t.Errorf("%s = %v, want 36", metrics.OtherModel, got)
	}
}
