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

// ReportDeltas reports, for variants measured in one run (their samples
// interleaved, so that they share the machine's noise), each one's p50 as
// NAME-p50-ns and each one's difference to the first's (the baseline) as
// delta-NAME-ns.
func ReportDeltas(b *testing.B, names []string, lat [][]time.Duration) {
	b.Helper()
	p50 := make([]float64, len(lat))
	for i, l := range lat {
		if len(l) == 0 {
			b.Fatalf("no samples of %s", names[i])
		}
		l = slices.Clone(l)
		slices.Sort(l)
		p50[i] = float64(l[len(l)/2].Nanoseconds())
		b.ReportMetric(p50[i], names[i]+"-p50-ns")
	}
	for i := 1; i < len(lat); i++ {
		b.ReportMetric(p50[i]-p50[0], "delta-"+names[i]+"-ns")
	}
}
