package oplog

import (
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestEtcdGuard: a log whose guard fails is fenced: its Append (and
// creating or removing it) fails with ErrFenced and writes nothing; the
// log stays unusable; another log of the same transaction is written.
func TestEtcdGuard(t *testing.T) {
	_, cli := etcdCluster(t)
	const owner = "/oplogtest-owner/"
	guard := func(key string) []clientv3.Cmp {
		return []clientv3.Cmp{clientv3.Compare(clientv3.Value(owner+key), "=", "me")}
	}
	for _, k := range []string{"agent", "other", "new"} {
		etcdDo(t, cli, clientv3.OpPut(owner+k, "me"))
	}
	s := etcdStore(t, cli, EtcdOptions{Guard: guard})
	b := etcdOf(s)
	l := openLog(t, s, "agent")
	defer l.Close()
	appendN(t, l, 2)
	etcdDo(t, cli, clientv3.OpPut(owner+"agent", "another host"))
	for _, want := range []string{"guard failed", "entry 4 not written: an earlier one failed"} {
		_, err := l.Append(testEntry(2))
		if !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `"agent"`) {
			t.Errorf("Append of a fenced log: %v, want ErrFenced naming the key and %q", err, want)
		}
	}
	if n := etcdCount(t, cli, b.logPrefix("agent")); n != 3 {
		t.Errorf("%d keys of the fenced log in etcd, want its header and 2 entries", n)
	}
	if err := s.Remove("nothing"); !errors.Is(err, ErrFenced) {
		t.Errorf("Remove of a log not owned: %v, want ErrFenced", err)
	}
	if _, err := s.Open("stranger", testHeader); !errors.Is(err, ErrFenced) {
		t.Errorf("Open (create) of a log not owned: %v, want ErrFenced", err)
	}
	if n := etcdCount(t, cli, b.logPrefix("stranger")); n != 0 {
		t.Errorf("the fenced create wrote %d keys", n)
	}

	// One transaction of two logs, one fenced: the other is written.
	openLog(t, s, "other").Close()
	openLog(t, s, "new").Close()
	etcdDo(t, cli, clientv3.OpPut(owner+"new", "another host"))
	var batch []*request
	for i, key := range []string{"other", "new", "other", "new"} {
		e := withSeq(testEntry(i), uint64(i/2+1))
		e.At = time.Now()
		batch = append(batch, &request{op: opAppend, key: key, seq: e.Seq, value: appendEntry(nil, &e)})
	}
	errs := make([]error, len(batch))
	if c := b.commit(batch, errs); c != 1 {
		t.Errorf("%d transactions committed, want 1 (of the log not fenced)", c)
	}
	for i, err := range errs {
		if fenced := batch[i].key == "new"; fenced != errors.Is(err, ErrFenced) || (!fenced && err != nil) {
			t.Errorf("request %d (of %q): %v", i, batch[i].key, err)
		}
	}
	if _, es, err := s.Entries("other"); err != nil || len(es) != 2 {
		t.Errorf("the log not fenced: %d entries, %v; want 2", len(es), err)
	}
	if _, es, err := s.Entries("new"); err != nil || len(es) != 0 {
		t.Errorf("the fenced log: %d entries, %v; want none", len(es), err)
	}
}

// TestEtcdUnreachable: with etcd gone, the store's requests fail within
// about the Timeout, and Close does not hang.
func TestEtcdUnreachable(t *testing.T) {
	const timeout = time.Second
	c, cli := etcdCluster(t)
	s := etcdStore(t, cli, EtcdOptions{Timeout: timeout})
	l := openLog(t, s, "agent")
	appendN(t, l, 1)
	c.Stop(0)
	within := func(what string, f func() error) {
		t.Helper()
		start := time.Now()
		err := f()
		if d := time.Since(start); d > timeout+2*time.Second {
			t.Errorf("%s took %v with etcd stopped, timeout %v", what, d, timeout)
		}
		if err == nil || errors.Is(err, ErrClosed) {
			t.Errorf("%s with etcd stopped: %v, want an error of etcd", what, err)
		}
		t.Logf("%s: %v", what, err)
	}
	within("Append", func() error { _, err := l.Append(testEntry(1)); return err })
	within("the next Append", func() error { _, err := l.Append(testEntry(2)); return err })
	within("Open", func() error { _, err := s.Open("other", testHeader); return err })
	within("Entries", func() error { _, _, err := s.Entries("agent"); return err })
	within("Keys", func() error { _, err := s.Keys(); return err })
	within("Summaries", func() error { _, err := s.Summaries(); return err })
	within("Remove", func() error { return s.Remove("gone") })
	start := time.Now()
	l.Close()
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if d := time.Since(start); d > timeout+2*time.Second {
		t.Errorf("Close took %v", d)
	}
}

func TestOpenEtcdInvalid(t *testing.T) {
	_, cli := etcdCluster(t)
	for name, o := range map[string]EtcdOptions{
		"no client":        {Prefix: "/p"},
		"no prefix":        {Client: cli},
		"only slashes":     {Client: cli, Prefix: "//"},
		"negative batch":   {Client: cli, Prefix: "/p", MaxBatch: -1},
		"negative timeout": {Client: cli, Prefix: "/p", Timeout: -1},
	} {
		if s, err := OpenEtcd(o); err == nil {
			s.Close()
			t.Errorf("%s: OpenEtcd succeeded", name)
		}
	}
	s := etcdStore(t, cli, EtcdOptions{Prefix: "/toolhostd/oplog/"})
	if s.Path() != "etcd:/toolhostd/oplog" {
		t.Errorf("Path %q, want etcd:/toolhostd/oplog", s.Path())
	}
}
