package oplog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
)

// etcdCluster is a single-member cluster for the test and a client of it.
func etcdCluster(t *testing.T) (*etcdtest.Cluster, *clientv3.Client) {
	c := etcdtest.Start(t, 1)
	return c, etcdtest.Client(t, c.Endpoints()...)
}

// etcdDo runs op on cli, failing the test on an error.
func etcdDo(t testing.TB, cli *clientv3.Client, op clientv3.Op) clientv3.OpResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Do(ctx, op)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// etcdValue is key's value ("" if none), read through cli.
func etcdValue(t testing.TB, cli *clientv3.Client, key string) []byte {
	t.Helper()
	kvs := etcdDo(t, cli, clientv3.OpGet(key)).Get().Kvs
	if len(kvs) == 0 {
		return nil
	}
	return kvs[0].Value
}

// etcdCount is how many keys are under prefix.
func etcdCount(t testing.TB, cli *clientv3.Client, prefix string) int64 {
	t.Helper()
	return etcdDo(t, cli, clientv3.OpGet(prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())).Get().Count
}

// TestEtcdSplit: a batch is split into transactions of at most 128 ops
// and about 1 MiB, in order, and all of it lands; an entry over etcd's
// request limit is refused, the log unharmed.
func TestEtcdSplit(t *testing.T) {
	_, cli := etcdCluster(t)
	s := etcdStore(t, cli, EtcdOptions{})
	openLog(t, s, "agent").Close()
	big := bytes.Repeat([]byte("x"), 600<<10)
	tests := []struct {
		name    string
		data    func(i int) []byte
		n, want int // entries, transactions
	}{
		{"300 small", func(i int) []byte { return fmt.Appendf(nil, "%d", i) }, 300, 3},
		{"128 small", func(i int) []byte { return nil }, 128, 1},
		{"3 of 600 KiB", func(int) []byte { return big }, 3, 3},
	}
	seq := uint64(0)
	for _, tt := range tests {
		batch := make([]*request, tt.n)
		for i := range batch {
			seq++
			e := Entry{Seq: seq, Kind: KindResult, Call: "c", Data: tt.data(i), At: time.Now()}
			batch[i] = &request{op: opAppend, key: "agent", seq: seq, value: appendEntry(nil, &e)}
		}
		errs := make([]error, len(batch))
		// The committer is idle: no Log of s is open.
		if got := etcdOf(s).commit(batch, errs); got != tt.want {
			t.Errorf("%s: %d transactions, want %d", tt.name, got, tt.want)
		}
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
	}
	_, es, err := s.Entries("agent")
	if err != nil || len(es) != int(seq) {
		t.Fatalf("Entries: %d entries, %v; want %d", len(es), err, seq)
	}

	// Through Append: AppendLater's entries go to the committer at once.
	l := openLog(t, s, "later")
	defer l.Close()
	before := s.Stats().Commits
	for i := range 300 {
		if _, err := l.AppendLater(testEntry(i)); err != nil {
			t.Fatal(err)
		}
	}
	if seq := mustAppend(t, l, testEntry(300)); seq != 301 {
		t.Fatalf("seq %d, want 301", seq)
	}
	if c := s.Stats().Commits - before; c < 3 {
		t.Errorf("301 entries in %d commits, want at least 3 (128 ops a transaction)", c)
	}
	if n := etcdCount(t, cli, etcdOf(s).logPrefix("later")); n != 302 {
		t.Errorf("%d keys in etcd for the log, want 301 entries and the header", n)
	}

	// Sizes: one under the request limit, alone in its transaction; one
	// over it, refused without taking a seq.
	if _, err := l.Append(Entry{Kind: KindResult, Data: make([]byte, 2<<20)}); err == nil || !strings.Contains(err.Error(), "etcd's request limit") {
		t.Errorf("Append of 2 MiB: %v, want an error of etcd's request limit", err)
	}
	if seq := mustAppend(t, l, Entry{Kind: KindResult, Data: make([]byte, 1400<<10)}); seq != 302 {
		t.Errorf("Append of 1.4 MiB: seq %d, want 302", seq)
	}
}

// TestEtcdCorrupt: what etcd holds of a log, changed behind the store's
// back, fails that log's Open and Entries with ErrCorrupt naming the seq;
// the other logs are fine.
func TestEtcdCorrupt(t *testing.T) {
	_, cli := etcdCluster(t)
	tests := []struct {
		name   string
		mutate func(b *etcdBackend) clientv3.Op // of log "a/s": entries 1..5
		want   string
	}{
		{"garbage", func(b *etcdBackend) clientv3.Op { return clientv3.OpPut(b.entryKey("a/s", 3), "garbage") },
			"at entry 3: unknown encoding version 103"},
		{"checksum", func(b *etcdBackend) clientv3.Op {
			return clientv3.OpPut(b.entryKey("a/s", 3), string(flip(etcdValue(t, cli, b.entryKey("a/s", 3)), -6)))
		}, "at entry 3: checksum mismatch"},
		{"empty", func(b *etcdBackend) clientv3.Op { return clientv3.OpPut(b.entryKey("a/s", 3), "") },
			"at entry 3: value of 0 bytes"},
		{"missing seq", func(b *etcdBackend) clientv3.Op { return clientv3.OpDelete(b.entryKey("a/s", 3)) },
			"at entry 3: missing (the next stored is 4)"},
		{"first missing", func(b *etcdBackend) clientv3.Op { return clientv3.OpDelete(b.entryKey("a/s", 1)) },
			"at entry 1: missing (the next stored is 2)"},
		{"entry of another seq", func(b *etcdBackend) clientv3.Op {
			return clientv3.OpPut(b.entryKey("a/s", 3), string(etcdValue(t, cli, b.entryKey("a/s", 2))))
		}, "at entry 3: holds entry 2"},
		{"seq 0", func(b *etcdBackend) clientv3.Op {
			return clientv3.OpPut(b.entryKey("a/s", 0), string(etcdValue(t, cli, b.entryKey("a/s", 1))))
		}, "at entry 0: out of place"},
		{"bad entry key", func(b *etcdBackend) clientv3.Op { return clientv3.OpPut(b.logPrefix("a/s")+"e/x", "y") },
			`at entry 6: a key "e/x" where the entry should be`},
		{"other key", func(b *etcdBackend) clientv3.Op { return clientv3.OpPut(b.logPrefix("a/s")+"x", "y") },
			`corrupt: a key "x"`},
		{"header missing", func(b *etcdBackend) clientv3.Op { return clientv3.OpDelete(b.headerKey("a/s")) },
			"corrupt: header: value of 0 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := etcdStore(t, cli, EtcdOptions{})
			for k, n := range map[string]int{"a/s": 5, "a": 2} {
				l := openLog(t, s, k)
				appendN(t, l, n)
				l.Close()
			}
			etcdDo(t, cli, tt.mutate(etcdOf(s)))
			for range 2 { // the failed Open leaves the key free
				_, err := s.Open("a/s", testHeader)
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Open of the corrupt log: %v, want ErrCorrupt", err)
				}
				if msg := err.Error(); !strings.Contains(msg, s.Path()) || !strings.Contains(msg, `log "a/s" is corrupt`) || !strings.Contains(msg, tt.want) {
					t.Errorf("error %q does not name the store, the key and %q", msg, tt.want)
				}
			}
			if _, _, err := s.Entries("a/s"); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Entries of the corrupt log: %v, want ErrCorrupt and %q", err, tt.want)
			}
			l := openLog(t, s, "a")
			checkRecorded(t, l, 2)
			mustAppend(t, l, testEntry(2))
			l.Close()
			if keys, err := s.Keys(); err != nil || !slices.Equal(keys, []string{"a", "a/s"}) {
				t.Errorf("Keys: %q, %v", keys, err)
			}
			if _, err := s.Summaries(); err != nil {
				t.Errorf("Summaries: %v", err)
			}
			if err := s.Remove("a/s"); err != nil {
				t.Fatalf("Remove of the corrupt log: %v", err)
			}
			l = openLog(t, s, "a/s")
			checkRecorded(t, l, 0)
			l.Close()
		})
	}
}

// TestEtcdMissingLog: a log deleted behind its back fails its next
// Append, and the later ones, writing nothing; other logs are fine.
func TestEtcdMissingLog(t *testing.T) {
	_, cli := etcdCluster(t)
	s := etcdStore(t, cli, EtcdOptions{})
	l := openLog(t, s, "agent")
	defer l.Close()
	mustAppend(t, l, testEntry(0))
	etcdDo(t, cli, clientv3.OpDelete(etcdOf(s).logPrefix("agent"), clientv3.WithPrefix()))
	for _, want := range []string{"the log is not in etcd", "entry 3 not written: an earlier one failed"} {
		_, err := l.Append(testEntry(1))
		if err == nil || errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `"agent"`) {
			t.Errorf("Append: %v, want an error naming the key and %q", err, want)
		}
	}
	if n := etcdCount(t, cli, etcdOf(s).logPrefix("agent")); n != 0 {
		t.Errorf("%d keys of the deleted log in etcd, want none", n)
	}
	other := openLog(t, s, "other")
	defer other.Close()
	appendN(t, other, 1)
}
