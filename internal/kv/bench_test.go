package kv_test

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/kv"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

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
			testenv.Latencies(b, func() error {
				return db.Update(func(tx *bolt.Tx) error { return tx.Bucket(name).Put([]byte("k"), value) })
			})
		})
		b.Run("get", func(b *testing.B) {
			testenv.Latencies(b, func() error {
				return db.View(func(tx *bolt.Tx) error { _ = tx.Bucket(name).Get([]byte("k")); return nil })
			})
		})
	})
	b.Run("service-bbolt", func(b *testing.B) {
		st, err := kv.OpenBolt(filepath.Join(b.TempDir(), "kv.db"), kv.BoltOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		bk, err := kv.New(st, kv.Options{}).Open("a", "", kv.Policy{Quota: kv.Quota{MaxKeys: 1000, MaxBytes: 1 << 20}}, "default")
		if err != nil {
			b.Fatal(err)
		}
		b.Run("set", func(b *testing.B) {
			testenv.Latencies(b, func() error { return bk.Set(b.Context(), "k", value) })
		})
		b.Run("get", func(b *testing.B) {
			testenv.Latencies(b, func() error { _, _, err := bk.Get(b.Context(), "k"); return err })
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
			bk, err := kv.New(be.st, kv.Options{}).Open("a", "", kv.Policy{}, "default")
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
