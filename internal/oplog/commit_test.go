package oplog

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestOrderOneLog(t *testing.T) {
	const writers, each = 8, 50
	s := testStore(t, Options{})
	l := openLog(t, s, "agent")
	seqs := make([][]uint64, writers) // seqs[w][i]: of writer w's append i
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				e := testEntry(i)
				e.Data = fmt.Appendf(nil, "%d/%d", w, i)
				seq, err := l.Append(e)
				if err != nil {
					t.Error(err)
					return
				}
				seqs[w] = append(seqs[w], seq)
			}
		})
	}
	wg.Wait()
	l.Close()
	var all []uint64
	for w, ss := range seqs {
		if !slices.IsSorted(ss) {
			t.Errorf("writer %d got seqs out of the order of its calls: %v", w, ss)
		}
		all = append(all, ss...)
	}
	slices.Sort(all)
	for i, seq := range all {
		if seq != uint64(i+1) {
			t.Fatalf("seqs are not 1..%d, unique and contiguous: %v", writers*each, all)
		}
	}

	s = reopen(t, s)
	l = openLog(t, s, "agent")
	defer l.Close()
	rec := l.Recorded()
	if len(rec) != writers*each {
		t.Fatalf("recorded %d entries, want %d", len(rec), writers*each)
	}
	for w, ss := range seqs {
		for i, seq := range ss {
			if got, want := string(rec[seq-1].Data), fmt.Sprintf("%d/%d", w, i); got != want {
				t.Errorf("entry %d holds %q, want %q (its Append returned %d)", seq, got, want, seq)
			}
		}
	}
}

func TestMaxBatch(t *testing.T) {
	s := testStore(t, Options{MaxBatch: 1})
	var wg sync.WaitGroup
	for i := range 8 {
		l := openLog(t, s, fmt.Sprint(i))
		defer l.Close()
		wg.Go(func() {
			for j := range 10 {
				if _, err := l.Append(testEntry(j)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if st := s.Stats(); st.Commits != st.Appends+8 || st.Appends != 80 {
		t.Errorf("stats with MaxBatch 1: %+v, want one commit per append and per created log", st)
	}
}

func TestStoreClose(t *testing.T) {
	s := testStore(t, Options{})
	l := openLog(t, s, "agent")
	mustAppend(t, l, testEntry(0))
	d := openLog(t, s, "agent/d")
	for range 2 {
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if _, err := l.Append(testEntry(1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Store.Close: %v, want ErrClosed", err)
	}
	if err := d.Delete(); !errors.Is(err, ErrClosed) {
		t.Errorf("Delete after Store.Close: %v, want ErrClosed", err)
	}
	if _, err := s.Open("other", testHeader); !errors.Is(err, ErrClosed) {
		t.Errorf("Open after Store.Close: %v, want ErrClosed", err)
	}
	if _, err := s.Keys(); !errors.Is(err, ErrClosed) {
		t.Errorf("Keys after Store.Close: %v, want ErrClosed", err)
	}
	if _, err := s.Summaries(); !errors.Is(err, ErrClosed) {
		t.Errorf("Summaries after Store.Close: %v, want ErrClosed", err)
	}
	if err := s.Remove("agent"); !errors.Is(err, ErrClosed) {
		t.Errorf("Remove after Store.Close: %v, want ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("Log.Close after Store.Close: %v", err)
	}
}

// TestAppendRacingClose: an Append racing Store.Close returns nil, and its
// entry is durable, or ErrClosed, and its entry is not written.
func TestAppendRacingClose(t *testing.T) {
	const writers = 16
	s := testStore(t, Options{})
	ok := make([]int, writers)
	var running, wg sync.WaitGroup
	running.Add(writers)
	for w := range writers {
		l := openLog(t, s, fmt.Sprint(w))
		wg.Go(func() {
			defer l.Close()
			for i := 0; ; i++ {
				_, err := l.Append(testEntry(i))
				if err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Errorf("Append racing Close: %v, want nil or ErrClosed", err)
					}
					if i == 0 {
						running.Done()
					}
					return
				}
				if ok[w]++; i == 0 {
					running.Done()
				}
			}
		})
	}
	running.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	s = testStore(t, Options{Path: s.Path()})
	for w := range writers {
		l := openLog(t, s, fmt.Sprint(w))
		if got := len(l.Recorded()); got != ok[w] {
			t.Errorf("log %d: recorded %d entries, but %d appends returned nil", w, got, ok[w])
		}
		l.Close()
	}
}

// TestAppendAfterFailure: an append that fails leaves its log refusing the
// later ones, which could leave a gap, and the other logs unharmed.
func TestAppendAfterFailure(t *testing.T) {
	s := testStore(t, Options{})
	l := openLog(t, s, "agent")
	defer l.Close()
	mustAppend(t, l, testEntry(0))
	// The log goes behind the store's back: out of the bbolt file (the
	// journal folded into it first) and out of what the journal knows.
	jb := s.b.(*journaled)
	if err := jb.fold(""); err != nil {
		t.Fatal(err)
	}
	err := jb.b.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(rootBucket).DeleteBucket([]byte("agent"))
	})
	if err != nil {
		t.Fatal(err)
	}
	jb.mu.Lock()
	delete(jb.present, "agent")
	jb.mu.Unlock()
	for _, want := range []string{"the log is not in the file", "entry 3 not written: an earlier one failed"} {
		_, err := l.Append(testEntry(1))
		if err == nil || errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `"agent"`) {
			t.Errorf("Append: %v, want an error naming the key and %q", err, want)
		}
	}
	other := openLog(t, s, "other")
	defer other.Close()
	if seq := mustAppend(t, other, testEntry(0)); seq != 1 {
		t.Errorf("another log's append: seq %d, want 1", seq)
	}
}
