package mcpclient_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
	"go.uber.org/zap"
)

// reportLatency reports the p50 and p99 of the per-call latencies.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkCallEcho calls the echo tool of an in-memory go-sdk server:
// baseline straight on a go-sdk ClientSession, tooling through
// MCP.CallTool (session lookup, deadline, session-loss watch, concurrency
// slot, result marshalled to JSON text).
func BenchmarkCallEcho(b *testing.B) {
	args := json.RawMessage(`{"text":"hello"}`)
	b.Run("baseline", func(b *testing.B) {
		ts := newTestServer(0)
		ctx := context.Background()
		cs := testenv.DirectSession(b, ts.Server, mcpclient.DefaultProtocolVersion)
		lat := make([]time.Duration, 0, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			t0 := time.Now()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
			if err != nil || res.IsError {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		b.StopTimer()
		reportLatency(b, lat)
	})
	b.Run("tooling", func(b *testing.B) {
		ts := newTestServer(0)
		m := newMCP(b, testConfig("bench"), zap.NewNop(), mcpclient.Options{Dialer: ts.Dialer()})
		testenv.ServeTooling(b, m, nil)
		waitConnected(b, m)
		ctx := context.Background()
		lat := make([]time.Duration, 0, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			t0 := time.Now()
			if _, err := m.CallTool(ctx, "echo", args); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		b.StopTimer()
		reportLatency(b, lat)
	})
}
