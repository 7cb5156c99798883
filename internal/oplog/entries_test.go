package oplog

import (
	"errors"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestEntries: Store.Entries reads a log's header and entries whether the
// log is open, closed or was opened again; an unknown key is ErrNotFound,
// a corrupt log ErrCorrupt, a closed store ErrClosed, a bad key an error.
func TestEntries(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, s *Store) *Store // the store to read
		key     string
		entries int   // want, when err is nil
		err     error // want errors.Is
		errHas  string
	}{
		{name: "open log", key: "agent/s1", entries: 3, setup: func(t *testing.T, s *Store) *Store {
			l := openLog(t, s, "agent/s1")
			t.Cleanup(func() { l.Close() })
			for i := range 3 {
				mustAppend(t, l, testEntry(i))
			}
			return s
		}},
		{name: "closed log", key: "agent", entries: 2, setup: func(t *testing.T, s *Store) *Store {
			l := openLog(t, s, "agent")
			mustAppend(t, l, testEntry(0))
			mustAppend(t, l, testEntry(1))
			l.Close()
			return s
		}},
		{name: "after reopen of the file", key: "agent", entries: 4, setup: func(t *testing.T, s *Store) *Store {
			l := openLog(t, s, "agent")
			for i := range 4 {
				mustAppend(t, l, testEntry(i))
			}
			l.Close()
			return reopen(t, s)
		}},
		{name: "empty log", key: "agent", entries: 0, setup: func(t *testing.T, s *Store) *Store {
			openLog(t, s, "agent").Close()
			return s
		}},
		{name: "no such log", key: "other", err: ErrNotFound, errHas: `log "other": not found`, setup: func(t *testing.T, s *Store) *Store {
			openLog(t, s, "agent").Close()
			return s
		}},
		{name: "deleted log", key: "agent", err: ErrNotFound, setup: func(t *testing.T, s *Store) *Store {
			l := openLog(t, s, "agent")
			mustAppend(t, l, testEntry(0))
			if err := l.Delete(); err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{name: "corrupt log", key: "agent", err: ErrCorrupt, errHas: `log "agent" is corrupt at entry 2: checksum mismatch`,
			setup: func(t *testing.T, s *Store) *Store {
				fill(t, s, map[string]int{"agent": 3})
				path := damage(t, s, func(tx *bolt.Tx) error {
					w := walLogOf(t, tx, "agent")
					return w.put(2, flip(w.get(2), -6))
				})
				return testStore(t, Options{Path: path})
			}},
		{name: "empty key", key: "", errHas: "empty log key", setup: func(_ *testing.T, s *Store) *Store { return s }},
		{name: "closed store", key: "agent", err: ErrClosed, setup: func(t *testing.T, s *Store) *Store {
			openLog(t, s, "agent").Close()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return s
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now()
			s := tt.setup(t, testStore(t, Options{}))
			h, es, err := s.Entries(tt.key)
			if tt.err != nil || tt.errHas != "" {
				if err == nil {
					t.Fatalf("Entries: no error, %d entries", len(es))
				}
				if tt.err != nil && !errors.Is(err, tt.err) {
					t.Errorf("Entries: %v, want %v", err, tt.err)
				}
				if !strings.Contains(err.Error(), tt.errHas) || !strings.Contains(err.Error(), s.Path()) {
					t.Errorf("Entries: %q does not name the file and %q", err, tt.errHas)
				}
				if h != (Header{}) || es != nil {
					t.Errorf("Entries failed with header %+v and %d entries", h, len(es))
				}
				return
			}
			if err != nil {
				t.Fatalf("Entries: %v", err)
			}
			if h != testHeader {
				t.Errorf("header %+v, want %+v", h, testHeader)
			}
			if len(es) != tt.entries {
				t.Fatalf("%d entries, want %d", len(es), tt.entries)
			}
			for i, got := range es {
				want := testEntry(i)
				want.Seq = uint64(i + 1)
				if err := sameEntry(got, want); err != nil {
					t.Error(err)
				}
				if got.At.Before(before.Truncate(0)) || got.At.After(time.Now()) {
					t.Errorf("entry %d: At %v, not during the test", got.Seq, got.At)
				}
			}
		})
	}
}

// TestEntriesWhileAppending: Entries of a log being appended to sees a
// prefix of its entries, each verified, never a gap.
func TestEntriesWhileAppending(t *testing.T) {
	s := testStore(t, Options{})
	l := openLog(t, s, "agent")
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		for i := range 200 {
			if _, err := l.Append(testEntry(i)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	last := 0
	for reading := true; reading; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			reading = false
		default:
		}
		_, es, err := s.Entries("agent")
		if err != nil {
			t.Fatalf("Entries while appending: %v", err)
		}
		if len(es) < last {
			t.Fatalf("Entries went from %d entries to %d", last, len(es))
		}
		last = len(es)
	}
	if _, es, err := s.Entries("agent"); err != nil || len(es) != 200 {
		t.Errorf("Entries after the appends: %d entries, %v", len(es), err)
	}
}
