package provider_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/provider/providertest"
)

// BenchmarkChatStream: one streamed answer of 100 deltas from the local
// fake, through each kind; reports the median time to the first delta
// and the deltas per second over the whole stream.
func BenchmarkChatStream(b *testing.B) {
	pieces := make([]string, 100)
	for i := range pieces {
		pieces[i] = fmt.Sprintf("tok%d ", i)
	}
	for _, api := range apis {
		b.Run(api.String(), func(b *testing.B) {
			srv := providertest.New(b, api)
			srv.SetDefault(providertest.Reply{Text: pieces, InputTokens: 10, OutputTokens: 100})
			p, err := provider.Open("bench", srv.Config(b), zap.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			defer p.(interface{ Close() error }).Close()
			ttft := make([]time.Duration, 0, b.N)
			var total time.Duration
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				first := time.Duration(0)
				n := 0
				_, err := p.ChatStream(context.Background(), hi, func(string) {
					if n == 0 {
						first = time.Since(start)
					}
					n++
				})
				if err != nil || n != len(pieces) {
					b.Fatalf("%d deltas, %v", n, err)
				}
				total += time.Since(start)
				ttft = append(ttft, first)
			}
			b.StopTimer()
			sort.Slice(ttft, func(i, j int) bool { return ttft[i] < ttft[j] })
			b.ReportMetric(float64(ttft[len(ttft)/2].Microseconds()), "µs-first-delta-p50")
			b.ReportMetric(float64(len(pieces)*b.N)/total.Seconds(), "deltas/s")
		})
	}
}
