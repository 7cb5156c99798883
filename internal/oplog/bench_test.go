package oplog

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
)

// BenchmarkAppend appends to one log, one entry at a time: each Append is
// a journal record of its own, so ns/op is about one fdatasync.
func BenchmarkAppend(b *testing.B) { benchAppend(b, testStore(b, Options{})) }

// BenchmarkAppendParallel appends from many goroutines, each to a log of
// its own, as the instances of a host do: their appends share
// journal records, so ns/op falls below an fdatasync.
func BenchmarkAppendParallel(b *testing.B) { benchAppendParallel(b, testStore(b, Options{})) }

// BenchmarkEtcdAppend is BenchmarkAppend over etcd: ns/op is about one
// round of etcd (a single embedded member on loopback that does not
// fsync: the floor of a real cluster's).
func BenchmarkEtcdAppend(b *testing.B) {
	c := etcdtest.Start(b, 1)
	benchAppend(b, etcdStore(b, etcdtest.Client(b, c.Endpoints()...), EtcdOptions{}))
}

// BenchmarkEtcdAppendParallel is BenchmarkAppendParallel over etcd.
func BenchmarkEtcdAppendParallel(b *testing.B) {
	c := etcdtest.Start(b, 1)
	benchAppendParallel(b, etcdStore(b, etcdtest.Client(b, c.Endpoints()...), EtcdOptions{}))
}

// BenchmarkEtcdAppendGuardedParallel is BenchmarkEtcdAppendParallel with
// a Guard as a cluster host's (cluster.Node.WriteGuard): one comparison
// per log of a transaction, on a key that holds.
func BenchmarkEtcdAppendGuardedParallel(b *testing.B) {
	c := etcdtest.Start(b, 1)
	cli := etcdtest.Client(b, c.Endpoints()...)
	if _, err := cli.Put(b.Context(), "/bench/owner", "this host"); err != nil {
		b.Fatal(err)
	}
	guard := func(string) []clientv3.Cmp {
		return []clientv3.Cmp{clientv3.Compare(clientv3.Version("/bench/owner"), ">", 0)}
	}
	benchAppendParallel(b, etcdStore(b, cli, EtcdOptions{Guard: guard}))
}

// benchAppend appends to one log of s, one entry at a time.
func benchAppend(b *testing.B, s *Store) {
	l := openLog(b, s, "agent/session")
	defer l.Close()
	e := testEntry(1)
	before := s.Stats()
	b.SetBytes(int64(len(appendEntry(nil, &e))))
	b.ResetTimer()
	for b.Loop() {
		if _, err := l.Append(e); err != nil {
			b.Fatal(err)
		}
	}
	reportCommits(b, before, s.Stats())
}

// benchAppendParallel appends to s from many goroutines, each to a log of
// its own.
func benchAppendParallel(b *testing.B, s *Store) {
	const parallelism = 16
	logs := make([]*Log, parallelism*runtime.GOMAXPROCS(0)) // one per goroutine of RunParallel
	for i := range logs {
		logs[i] = openLog(b, s, fmt.Sprintf("agent%d/session", i))
		defer logs[i].Close()
	}
	var n atomic.Int64
	e := testEntry(1)
	before := s.Stats()
	b.SetBytes(int64(len(appendEntry(nil, &e))))
	b.SetParallelism(parallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		l := logs[n.Add(1)-1]
		for pb.Next() {
			if _, err := l.Append(e); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportCommits(b, before, s.Stats())
}

// reportCommits reports the transactions per append between two Stats.
func reportCommits(b *testing.B, before, after Stats) {
	if appends := after.Appends - before.Appends; appends > 0 {
		b.ReportMetric(float64(after.Commits-before.Commits)/float64(appends), "commits/append")
	}
}
