package kv_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/kv"
)

// reportLatency reports the p50 and p99 of lat.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Nanoseconds()), "p99-ns")
}

// BenchmarkGetSet: a 100-byte value's get and set through the Service on
// bbolt, and the baseline: bbolt called directly (a View, an Update with
// its fsync) on the same disk.
func BenchmarkGetSet(b *testing.B) {
	value := make([]byte, 100)
	b.Run("baseline-bbolt", func(b *testing.B) {
		db, err := bolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		name := []byte("b")
		if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(name); return err }); err != nil {
			b.Fatal(err)
		}
		b.Run("set", func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(name).Put([]byte("k"), value) }); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			reportLatency(b, lat)
		})
		b.Run("get", func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				_ = db.View(func(tx *bolt.Tx) error { _ = tx.Bucket(name).Get([]byte("k")); return nil })
				lat = append(lat, time.Since(start))
			}
			reportLatency(b, lat)
		})
	})
	b.Run("service-bbolt", func(b *testing.B) {
		st, err := kv.OpenBolt(filepath.Join(b.TempDir(), "kv.db"), kv.BoltOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		bk, err := kv.New(st).Open("a", "", kv.Policy{Quota: kv.Quota{MaxKeys: 1000, MaxBytes: 1 << 20}}, "default")
		if err != nil {
			b.Fatal(err)
		}
		b.Run("set", func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				if err := bk.Set(b.Context(), "k", value); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			reportLatency(b, lat)
		})
		b.Run("get", func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				if _, _, err := bk.Get(b.Context(), "k"); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			reportLatency(b, lat)
		})
	})
}

// BenchmarkIncrement: atomics.increment of one key from 4 goroutines, on
// both backends (etcd: one embedded member, fsync off as in the tests).
func BenchmarkIncrement(b *testing.B) {
	c := etcdtest.Start(b, 1)
	bolt, err := kv.OpenBolt(filepath.Join(b.TempDir(), "kv.db"), kv.BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer bolt.Close()
	for _, be := range []struct {
		name string
		st   kv.Store
	}{
		{"bbolt", bolt},
		{"etcd", kv.NewEtcd(etcdtest.Client(b, c.Endpoints()...), kv.EtcdOptions{})},
	} {
		b.Run(be.name, func(b *testing.B) {
			bk, err := kv.New(be.st).Open("a", "", kv.Policy{}, "default")
			if err != nil {
				b.Fatal(err)
			}
			b.SetParallelism(4)
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := bk.Increment(b.Context(), "n", 1); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "increments/s")
		})
	}
}
