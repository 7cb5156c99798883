package oplog

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
)

// etcdPrefixes numbers the etcd stores of the tests: each has a prefix of
// its own, none another's prefix.
var etcdPrefixes atomic.Int64

// etcdStore opens a store of cli under a fresh prefix (o.Prefix if set),
// closed at cleanup.
func etcdStore(t testing.TB, cli *clientv3.Client, o EtcdOptions) *Store {
	t.Helper()
	if o.Prefix == "" {
		o.Prefix = fmt.Sprintf("/oplogtest/%d", etcdPrefixes.Add(1))
	}
	o.Client = cli
	s, err := OpenEtcd(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// etcdOf is the backend of an etcd store.
func etcdOf(s *Store) *etcdBackend { return s.b.(*etcdBackend) }

// testBackend makes stores of one backend.
type testBackend struct {
	name   string
	open   func(t testing.TB) *Store           // a fresh, empty store
	reopen func(t testing.TB, s *Store) *Store // s closed, its logs opened again
}

// testBackends are bbolt and etcd, of a single-member cluster for the
// test.
func testBackends(t *testing.T) []testBackend {
	c := etcdtest.Start(t, 1)
	cli := etcdtest.Client(t, c.Endpoints()...)
	return []testBackend{
		{"bbolt", func(t testing.TB) *Store { return testStore(t, Options{}) }, reopen},
		{"etcd", func(t testing.TB) *Store { return etcdStore(t, cli, EtcdOptions{}) },
			func(t testing.TB, s *Store) *Store {
				t.Helper()
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				return etcdStore(t, cli, EtcdOptions{Prefix: strings.TrimPrefix(s.Path(), "etcd:")})
			}},
	}
}

// TestBackends runs the main behaviours of a Store over each backend.
func TestBackends(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, b testBackend)
	}{
		{"reopen shows recorded", testReopen},
		{"append later", testLater},
		{"delete", testDeleteKeys},
		{"keys do not collide", testNoCollide},
		{"group commit", testShareCommits},
		{"summaries and Len", testSummariesAndLen},
		{"store closed", testClosed},
	}
	for _, b := range testBackends(t) {
		for _, tt := range tests {
			t.Run(b.name+"/"+tt.name, func(t *testing.T) { tt.run(t, b) })
		}
	}
}

// appendN appends testEntry(0..n-1) to l.
func appendN(t testing.TB, l *Log, n int) {
	t.Helper()
	for i := range n {
		if seq := mustAppend(t, l, testEntry(i)); seq != uint64(i+1) {
			t.Fatalf("%s: append %d: seq %d", l.Key(), i, seq)
		}
	}
}

// checkSummaries fails the test unless s's summaries are of the logs of
// counts, sorted by key, each with its count of entries, its size in
// sizes and the test header.
func checkSummaries(t *testing.T, s *Store, counts map[string]int, sizes map[string]int64) {
	t.Helper()
	sums, err := s.Summaries()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, sum := range sums {
		keys = append(keys, sum.Key)
		if sum.Header != testHeader || sum.Entries != counts[sum.Key] || sum.Bytes != sizes[sum.Key] {
			t.Errorf("summary %+v, want %d entries of %d bytes and header %+v", sum, counts[sum.Key], sizes[sum.Key], testHeader)
		}
	}
	if want := slices.Sorted(maps.Keys(counts)); !slices.Equal(keys, want) {
		t.Errorf("summaries of %q, want %q", keys, want)
	}
}

// testSummariesAndLen: a log's Len is its entries and their bytes, and
// the store's summaries (after a reopen) say the same, an empty log's
// included.
func testSummariesAndLen(t *testing.T, b testBackend) {
	s := b.open(t)
	counts := map[string]int{"c": 3, "a": 0, "b/s": 7}
	sizes := map[string]int64{}
	for k, n := range counts {
		l := openLog(t, s, k)
		appendN(t, l, n)
		got, size := l.Len()
		if got != n {
			t.Errorf("%s: Len %d entries, want %d", k, got, n)
		}
		if n > 0 && size <= int64(n*len(testEntry(0).Call)) {
			t.Errorf("%s: Len %d bytes, too few for %d entries", k, size, n)
		}
		sizes[k] = size
		l.Close()
	}
	checkSummaries(t, b.reopen(t, s), counts, sizes)
}

// checkRecorded fails the test unless l recorded testEntry(0..n-1).
func checkRecorded(t testing.TB, l *Log, n int) {
	t.Helper()
	rec := l.Recorded()
	if len(rec) != n {
		t.Fatalf("%s: recorded %d entries, want %d", l.Key(), len(rec), n)
	}
	for i, got := range rec {
		if err := sameEntry(got, withSeq(testEntry(i), uint64(i+1))); err != nil {
			t.Errorf("%s: %v", l.Key(), err)
		}
	}
}

func testReopen(t *testing.T, b testBackend) {
	s := b.open(t)
	l := openLog(t, s, "agent/session")
	appendN(t, l, 20)
	n, size := l.Len()
	l.Close()
	s = b.reopen(t, s)
	l, err := s.Open("agent/session", Header{Component: "other"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Header() != testHeader {
		t.Errorf("header after reopen %+v, want the first %+v", l.Header(), testHeader)
	}
	checkRecorded(t, l, 20)
	if n2, size2 := l.Len(); n2 != n || size2 != size {
		t.Errorf("Len after reopen (%d, %d), want (%d, %d)", n2, size2, n, size)
	}
	if seq := mustAppend(t, l, testEntry(20)); seq != 21 {
		t.Errorf("append after reopen: seq %d, want 21", seq)
	}
	h, es, err := s.Entries("agent/session")
	if err != nil || h != testHeader || len(es) != 21 {
		t.Errorf("Entries: %d entries, header %+v, %v", len(es), h, err)
	}
	if _, err := s.Open("agent/session", testHeader); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), s.Path()) {
		t.Errorf("second Open: %v, want ErrBusy naming %s", err, s.Path())
	}
}

func testLater(t *testing.T, b testBackend) {
	tests := []struct {
		steps string // a: Append, l: AppendLater
		close bool   // Log.Close before the store stops
		want  int
	}{
		{"lla", false, 3}, // with the next Append
		{"all", true, 3},  // at Close
		{"all", false, 1}, // lost with the store
	}
	for _, tt := range tests {
		s := b.open(t)
		l := openLog(t, s, "agent")
		for i, c := range tt.steps {
			var err error
			if c == 'a' {
				_, err = l.Append(testEntry(i))
			} else {
				_, err = l.AppendLater(testEntry(i))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if tt.close {
			l.Close()
		}
		s = b.reopen(t, s)
		l2 := openLog(t, s, "agent")
		checkRecorded(t, l2, tt.want)
		l2.Close()
	}
}

func testDeleteKeys(t *testing.T, b testBackend) {
	s := b.open(t)
	keep := openLog(t, s, "keep")
	appendN(t, keep, 2)
	keep.Close()
	l := openLog(t, s, "gone")
	appendN(t, l, 3)
	if keys, err := s.Keys(); err != nil || !slices.Equal(keys, []string{"gone", "keep"}) {
		t.Errorf("Keys: %q, %v; want [gone keep]", keys, err)
	}
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(testEntry(3)); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Delete: %v, want ErrClosed", err)
	}
	s = b.reopen(t, s)
	if keys, err := s.Keys(); err != nil || !slices.Equal(keys, []string{"keep"}) {
		t.Errorf("Keys after Delete: %q, %v; want [keep]", keys, err)
	}
	if _, _, err := s.Entries("gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Entries of the deleted log: %v, want ErrNotFound", err)
	}
	l = openLog(t, s, "gone")
	checkRecorded(t, l, 0)
	l.Close()
	if err := s.Remove("keep"); err != nil {
		t.Fatal(err)
	}
	if keys, err := s.Keys(); err != nil || !slices.Equal(keys, []string{"gone"}) {
		t.Errorf("Keys after Remove: %q, %v; want [gone]", keys, err)
	}
}

// testNoCollide: a log's key is no prefix of another's, whatever the
// slashes and percent signs of the keys.
func testNoCollide(t *testing.T, b testBackend) {
	s := b.open(t)
	counts := map[string]int{"a": 1, "a/b": 2, "a%2Fb": 3, "a/b/c": 4, "ünïcode/ключ": 5}
	sizes := map[string]int64{}
	for k, n := range counts {
		l := openLog(t, s, k)
		appendN(t, l, n)
		_, sizes[k] = l.Len()
		l.Close()
	}
	want := slices.Sorted(maps.Keys(counts))
	if keys, err := s.Keys(); err != nil || !slices.Equal(keys, want) {
		t.Errorf("Keys: %q, %v; want %q", keys, err, want)
	}
	checkSummaries(t, s, counts, sizes)
	if err := s.Remove("a"); err != nil {
		t.Fatal(err)
	}
	s = b.reopen(t, s)
	for k, n := range counts {
		_, es, err := s.Entries(k)
		switch {
		case k == "a" && !errors.Is(err, ErrNotFound):
			t.Errorf("Entries of the removed log: %v, want ErrNotFound", err)
		case k != "a" && (err != nil || len(es) != n):
			t.Errorf("Entries(%q) after Remove of a: %d entries, %v; want %d", k, len(es), err, n)
		}
	}
}

// testShareCommits: appends of many logs at once share transactions.
func testShareCommits(t *testing.T, b testBackend) {
	const logs, each = 200, 20
	s := b.open(t)
	ls := make([]*Log, logs)
	for i := range ls {
		ls[i] = openLog(t, s, fmt.Sprintf("agent%d/session", i))
	}
	before := s.Stats()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, l := range ls {
		wg.Go(func() {
			<-start
			for i := range each {
				if seq, err := l.Append(testEntry(i)); err != nil || seq != uint64(i+1) {
					t.Errorf("%s: append %d: seq %d, %v", l.Key(), i, seq, err)
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	st := s.Stats()
	entries, commits := st.Entries-before.Entries, st.Commits-before.Commits
	if entries != logs*each || st.Appends-before.Appends != logs*each {
		t.Errorf("stats %+v (before %+v): want %d more appends and entries", st, before, logs*each)
	}
	if commits >= entries {
		t.Errorf("%d entries took %d commits: no batching", entries, commits)
	}
	t.Logf("%d entries in %d commits", entries, commits)
	for _, l := range ls {
		l.Close()
	}
	s = b.reopen(t, s)
	for i := range logs {
		l := openLog(t, s, fmt.Sprintf("agent%d/session", i))
		checkRecorded(t, l, each)
		l.Close()
	}
}

func testClosed(t *testing.T, b testBackend) {
	s := b.open(t)
	l := openLog(t, s, "agent")
	mustAppend(t, l, testEntry(0))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(testEntry(1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Store.Close: %v, want ErrClosed", err)
	}
	if _, err := s.Open("other", testHeader); !errors.Is(err, ErrClosed) {
		t.Errorf("Open after Store.Close: %v, want ErrClosed", err)
	}
	if _, _, err := s.Entries("agent"); !errors.Is(err, ErrClosed) {
		t.Errorf("Entries after Store.Close: %v, want ErrClosed", err)
	}
	if _, err := s.Keys(); !errors.Is(err, ErrClosed) {
		t.Errorf("Keys after Store.Close: %v, want ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("Log.Close after Store.Close: %v", err)
	}
}
