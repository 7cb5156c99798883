package testenv

import (
	"slices"
	"testing"
	"time"
)

// Latencies runs f once per benchmark iteration, timing each call, and
// reports the p50 and p99 (p50-ns, p99-ns; benchtable compares them with a
// "baseline" sibling). An error of f ends the benchmark.
func Latencies(b *testing.B, f func() error) {
	b.Helper()
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Nanoseconds()), "p99-ns")
}
