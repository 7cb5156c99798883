package metrics_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/metrics"
	"github.com/toolhostd/toolhostd/internal/status"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// BenchmarkCallTool: the decorator's cost on a call to an in-process go-sdk
// server (baseline: the bare tooling).
func BenchmarkCallTool(b *testing.B) {
	s := newServer()
	inner := connect(b, s, "bench")
	m := metrics.New(metrics.Options{})
	for _, v := range []struct {
		name string
		t    tooling.Tooling
	}{{"baseline", inner}, {"instrumented", m.Instrument(inner)}} {
		b.Run(v.name, func(b *testing.B) {
			ctx := b.Context()
			args := json.RawMessage(`{}`)
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				if _, err := v.t.CallTool(ctx, "echo", args); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
				b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
			}
		})
	}
}

// BenchmarkScrape: one gather of a registry with 50 agents and 10 toolings
// in the Backend.
func BenchmarkScrape(b *testing.B) {
	m := metrics.New(metrics.Options{Source: newBigBackend(50, 10)})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Registry().Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

// bigBackend is a Source with n agents and k toolings.
type bigBackend struct {
	agents   []status.Agent
	toolings []status.Tooling
}

func newBigBackend(n, k int) *bigBackend {
	b := &bigBackend{}
	for i := range n {
		b.agents = append(b.agents, status.Agent{Name: fmt.Sprintf("agent-%d", i), State: "running", Inbox: i})
	}
	for i := range k {
		b.toolings = append(b.toolings, status.Tooling{Name: fmt.Sprintf("tooling-%d", i), State: "connected", Tools: i})
	}
	return b
}

func (b *bigBackend) Agents() []status.Agent     { return b.agents }
func (b *bigBackend) Toolings() []status.Tooling { return b.toolings }
