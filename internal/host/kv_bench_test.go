package host

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/kv"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// kvValueSize is the value the key-value benchmarks get and set.
const kvValueSize = 100

// BenchmarkKeyValueGuest: a guest's bucket.get and bucket.set of a
// 100-byte value on bbolt, p50 and p99 of each call as the guest times it
// (one probe makes all b.N calls: ns/op also counts its start, amortized).
// baseline is kv.Bolt called directly from Go in the same run (Get, and
// Update with the value), so the ratio is what the guest's path adds: the
// canonical ABI, the host glue, the Service's policy and counters. A set
// is an fsynced bbolt transaction either way.
func BenchmarkKeyValueGuest(b *testing.B) {
	s := env(b)
	value := make([]byte, kvValueSize)
	for _, op := range []string{"get", "set"} {
		b.Run(op, func(b *testing.B) {
			b.Run("baseline", func(b *testing.B) {
				st := boltStore(b)
				ref := kv.Ref{Agent: "bench", Bucket: "b"}
				set := func() error {
					_, err := st.Update(context.Background(), ref, "k", kv.Quota{}, func(kv.Version) ([]byte, bool, error) { return value, true, nil })
					return err
				}
				if err := set(); err != nil {
					b.Fatal(err)
				}
				if op == "set" {
					testenv.Latencies(b, set)
					return
				}
				testenv.Latencies(b, func() error {
					_, ok, err := st.Get(context.Background(), ref, "k")
					if err == nil && !ok {
						b.Fatal("no value")
					}
					return err
				})
			})
			for _, g := range currentGuests {
				b.Run(g.String(), func(b *testing.B) {
					svc := kv.New(boltStore(b), kv.Options{})
					if err := mustOpen(b, svc, "bench", "", "b").Set(b.Context(), "k", value); err != nil {
						b.Fatal(err)
					}
					s.program(b, g.dir(), "probe")
					b.ResetTimer()
					rs := s.probe(b, probeOpts{guest: g, name: "kv-bench", bucket: opener(svc, "bench", "", kv.Policy{})},
						step{"op": "kv-open", "name": "b", "as": "b"},
						step{"op": "kv-time", "h": "b", "what": op, "key": "k", "size": kvValueSize, "n": b.N},
					)
					b.StopTimer()
					reportPercentiles(b, guestNS(b, rs[1], b.N))
				})
			}
		})
	}
}

// guestNS is the per-call times of a kv-time step.
func guestNS(b *testing.B, r stepResult, n int) []time.Duration {
	b.Helper()
	var out struct{ NS []int64 }
	if r.Err != nil || r.Thrown != "" || json.Unmarshal(r.OK, &out) != nil || len(out.NS) != n {
		b.Fatalf("kv-time: %+v %s", r.Err, r.Thrown)
	}
	return durations(out.NS)
}

// BenchmarkKeyValueIncrements: atomics.increment of one key in a loop,
// as increments/s, on bbolt and on one embedded etcd member. baseline is
// kv.Bucket.Increment called from Go (the Service, as the host calls it);
// the others are one guest making all b.N increments.
func BenchmarkKeyValueIncrements(b *testing.B) {
	s := env(b)
	for _, be := range kvBackends(b, true) {
		b.Run(be.name, func(b *testing.B) {
			b.Run("baseline", func(b *testing.B) {
				bk := mustOpen(b, kv.New(be.open(b), kv.Options{}), "bench", "", "b")
				start := time.Now()
				for b.Loop() {
					if _, err := bk.Increment(b.Context(), "n", 1); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "increments/s")
			})
			for _, g := range currentGuests {
				b.Run(g.String(), func(b *testing.B) {
					svc := kv.New(be.open(b), kv.Options{})
					s.program(b, g.dir(), "probe")
					b.ResetTimer()
					start := time.Now()
					rs := s.probe(b, probeOpts{guest: g, name: "kv-bench", bucket: opener(svc, "bench", "", kv.Policy{})},
						step{"op": "kv-open", "name": "b", "as": "b"},
						step{"op": "kv-increments", "h": "b", "key": "n", "n": b.N},
					)
					d := time.Since(start)
					if got := okAs[int](b, rs[1]); got != b.N {
						b.Fatalf("the last increment returned %d, want %d", got, b.N)
					}
					b.ReportMetric(float64(b.N)/d.Seconds(), "increments/s")
				})
			}
		})
	}
}
