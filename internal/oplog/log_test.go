package oplog

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	big := Entry{Kind: KindCompleted, Call: "c", Data: bytes.Repeat([]byte("x"), 1<<20)}
	tests := []struct {
		name    string
		entries []Entry
	}{
		{"empty", nil},
		{"one", []Entry{testEntry(0)}},
		{"many", func() (es []Entry) {
			for i := range 100 {
				es = append(es, testEntry(i))
			}
			return es
		}()},
		{"no digest or data", []Entry{{Kind: KindStarted, Call: "f"}, {Kind: KindCompleted}}},
		{"large", []Entry{testEntry(1), big, testEntry(2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testStore(t, Options{})
			l := openLog(t, s, "agent/session")
			if got := l.Header(); got != testHeader {
				t.Errorf("header of a new log %+v, want %+v", got, testHeader)
			}
			if len(l.Recorded()) != 0 {
				t.Errorf("a new log has recorded %d entries", len(l.Recorded()))
			}
			before := time.Now()
			for i, e := range tt.entries {
				if seq := mustAppend(t, l, e); seq != uint64(i+1) {
					t.Errorf("append %d: seq %d", i, seq)
				}
			}
			after := time.Now()
			n, size := l.Len()
			if n != len(tt.entries) {
				t.Errorf("Len %d entries, want %d", n, len(tt.entries))
			}
			l.Close()

			s = reopen(t, s)
			l, err := s.Open("agent/session", Header{Component: "other", Started: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if got := l.Header(); got != testHeader {
				t.Errorf("header after reopen %+v, want the first %+v", got, testHeader)
			}
			rec := l.Recorded()
			if len(rec) != len(tt.entries) {
				t.Fatalf("recorded %d entries, want %d", len(rec), len(tt.entries))
			}
			for i, got := range rec {
				want := tt.entries[i]
				want.Seq = uint64(i + 1)
				if err := sameEntry(got, want); err != nil {
					t.Error(err)
				}
				if got.At.Location() != time.UTC || got.At.Before(before.Truncate(0)) || got.At.After(after) {
					t.Errorf("entry %d: At %v, not in UTC between %v and %v", got.Seq, got.At, before, after)
				}
			}
			if n2, size2 := l.Len(); n2 != n || size2 != size {
				t.Errorf("Len after reopen (%d, %d), want (%d, %d)", n2, size2, n, size)
			}
			if seq := mustAppend(t, l, testEntry(7)); seq != uint64(len(tt.entries)+1) {
				t.Errorf("append after reopen: seq %d, want %d", seq, len(tt.entries)+1)
			}
		})
	}
}

func TestBusy(t *testing.T) {
	s := testStore(t, Options{})
	l := openLog(t, s, "agent")
	if _, err := s.Open("agent", testHeader); !errors.Is(err, ErrBusy) {
		t.Fatalf("second Open: %v, want ErrBusy", err)
	} else if !strings.Contains(err.Error(), s.Path()) || !strings.Contains(err.Error(), `"agent"`) {
		t.Errorf("error %q does not name the file and the key", err)
	}
	if err := s.Remove("agent"); !errors.Is(err, ErrBusy) {
		t.Errorf("Remove of an open log: %v, want ErrBusy", err)
	}
	openLog(t, s, "agent/s1").Close() // another key
	mustAppend(t, l, testEntry(0))
	for range 2 {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Append(testEntry(1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v, want ErrClosed", err)
	}
	l = openLog(t, s, "agent")
	defer l.Close()
	if len(l.Recorded()) != 1 {
		t.Errorf("reopened log recorded %d entries, want 1", len(l.Recorded()))
	}
}

func TestDelete(t *testing.T) {
	s := testStore(t, Options{})
	keep := openLog(t, s, "keep")
	mustAppend(t, keep, testEntry(0))
	keep.Close()
	l := openLog(t, s, "gone")
	mustAppend(t, l, testEntry(0))
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(testEntry(1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Delete: %v, want ErrClosed", err)
	}
	if err := l.Delete(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Delete: %v, want ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close after Delete: %v", err)
	}
	s = reopen(t, s) // durably
	if keys, err := s.Keys(); err != nil || !slices.Equal(keys, []string{"keep"}) {
		t.Errorf("Keys after Delete: %q, %v; want [keep]", keys, err)
	}
	l = openLog(t, s, "gone")
	defer l.Close()
	if len(l.Recorded()) != 0 {
		t.Errorf("a deleted log, opened again, recorded %d entries", len(l.Recorded()))
	}
}

func TestRemove(t *testing.T) {
	s := testStore(t, Options{})
	for _, k := range []string{"b", "a/s", "a"} {
		l := openLog(t, s, k)
		mustAppend(t, l, testEntry(0))
		l.Close()
	}
	if keys, _ := s.Keys(); !slices.Equal(keys, []string{"a", "a/s", "b"}) {
		t.Errorf("Keys %q, want them sorted", keys)
	}
	for _, k := range []string{"a/s", "none"} {
		if err := s.Remove(k); err != nil {
			t.Errorf("Remove(%q): %v", k, err)
		}
	}
	s = reopen(t, s)
	if keys, _ := s.Keys(); !slices.Equal(keys, []string{"a", "b"}) {
		t.Errorf("Keys after Remove %q, want [a b]", keys)
	}
}

func TestKeys(t *testing.T) {
	tests := []struct {
		key string
		ok  bool
	}{
		{"agent", true},
		{"agent/session", true},
		{"ünïcode/ключ", true},
		{strings.Repeat("k", 512), true},
		{"", false},
		{strings.Repeat("k", 513), false},
		{"bad\xff", false},
	}
	s := testStore(t, Options{})
	for _, tt := range tests {
		l, err := s.Open(tt.key, testHeader)
		if (err == nil) != tt.ok {
			t.Errorf("Open(%.20q): %v, want ok=%v", tt.key, err, tt.ok)
		}
		if err == nil {
			l.Close()
		}
		if err := s.Remove(tt.key); (err == nil) != tt.ok {
			t.Errorf("Remove(%.20q): %v, want ok=%v", tt.key, err, tt.ok)
		}
	}
}

func TestAppendInvalid(t *testing.T) {
	tests := []struct {
		name string
		e    Entry
	}{
		{"kind 0", Entry{Call: "f"}},
		{"kind 6", Entry{Kind: 6, Call: "f"}},
		{"digest of 65 bytes", Entry{Kind: KindResult, Digest: make([]byte, 65)}},
	}
	s := testStore(t, Options{})
	l := openLog(t, s, "agent")
	defer l.Close()
	for _, tt := range tests {
		if _, err := l.Append(tt.e); err == nil || errors.Is(err, ErrClosed) {
			t.Errorf("%s: Append: %v, want an error of the entry", tt.name, err)
		}
	}
	if seq := mustAppend(t, l, Entry{Kind: KindResult, Digest: make([]byte, 64)}); seq != 1 {
		t.Errorf("seq after refused appends %d, want 1", seq)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindResult: "result", KindStarted: "started", KindCompleted: "completed", 0: "kind(0)", 9: "kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
}
