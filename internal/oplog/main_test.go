package oplog

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
)

// TestMain checks for leaks with the options of a package whose tests run
// embedded etcd members (etcd_test.go); the package itself serves and
// dials no HTTP.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, etcdtest.LeakOptions()...) }

// testStore opens a store in a fresh t.TempDir() (opts.Path if set),
// closed at cleanup.
func testStore(t testing.TB, opts Options) *Store {
	t.Helper()
	if opts.Path == "" {
		opts.Path = filepath.Join(t.TempDir(), "oplog.db")
	}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// reopen closes s and opens its file again.
func reopen(t testing.TB, s *Store) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return testStore(t, Options{Path: s.Path()})
}

// openLog opens key in s, failing the test on an error.
func openLog(t testing.TB, s *Store, key string) *Log {
	t.Helper()
	l, err := s.Open(key, testHeader)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

var testHeader = Header{Component: "9f86d081884c7d659a2feaa0c55ad015", Started: time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)}

// testEntry is the i-th entry of a test log.
func testEntry(i int) Entry {
	return Entry{
		Kind:   Kind(i%3 + 1),
		Call:   "toolhost:agent/tooling@0.3.0#[method]tooling.call-tool",
		Digest: []byte{byte(i), byte(i >> 8), 0xd1, 0x9e},
		Data:   fmt.Appendf(nil, `{"result":%d}`, i),
	}
}

// mustAppend appends e to l, failing the test on an error.
func mustAppend(t testing.TB, l *Log, e Entry) uint64 {
	t.Helper()
	seq, err := l.Append(e)
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// sameEntry reports how got differs from want (Seq and Kind to Data; At is
// compared by the caller).
func sameEntry(got, want Entry) error {
	switch {
	case got.Seq != want.Seq:
		return fmt.Errorf("seq %d, want %d", got.Seq, want.Seq)
	case got.Kind != want.Kind, got.Call != want.Call,
		!bytes.Equal(got.Digest, want.Digest), !bytes.Equal(got.Data, want.Data):
		return fmt.Errorf("entry %d is %+v, want %+v", want.Seq, got, want)
	}
	return nil
}
