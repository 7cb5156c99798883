package oplog

import (
	"testing"
)

// TestAppendLater: an entry appended later takes its seq at once, is
// written with the log's next Append (one transaction for both) or by
// Close, and a store that stops first (a crash) loses it and what came
// after it, never what came before: the log is a prefix of the appends.
func TestAppendLater(t *testing.T) {
	tests := []struct {
		name  string
		steps string // a: Append, l: AppendLater
		close bool   // Log.Close before the store stops
		want  int    // entries the reopened log holds
	}{
		{"flushed by the next append", "lla", false, 3},
		{"flushed by close", "all", true, 3},
		{"lost with the store", "all", false, 1},
		{"only later, lost", "ll", false, 0},
		{"prefix kept", "alal", false, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testStore(t, Options{})
			l := openLog(t, s, "agent")
			before := s.Stats().Commits
			for i, c := range tt.steps {
				var seq uint64
				var err error
				if c == 'a' {
					seq, err = l.Append(testEntry(i))
				} else {
					seq, err = l.AppendLater(testEntry(i))
				}
				if err != nil || seq != uint64(i+1) {
					t.Fatalf("step %d (%c): seq %d, %v", i, c, seq, err)
				}
			}
			if n, _ := l.Len(); n != len(tt.steps) {
				t.Errorf("Len %d, want %d", n, len(tt.steps))
			}
			if tt.steps == "lla" {
				if c := s.Stats().Commits - before; c != 1 {
					t.Errorf("%d commits for two later entries and an append, want 1", c)
				}
			}
			if tt.close {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			}
			s = reopen(t, s) // an unclosed Log's key was busy only in the store that stopped
			l2 := openLog(t, s, "agent")
			defer l2.Close()
			got := l2.Recorded()
			if len(got) != tt.want {
				t.Fatalf("reopened: %d entries, want %d", len(got), tt.want)
			}
			for i, e := range got {
				if err := sameEntry(e, withSeq(testEntry(i), uint64(i+1))); err != nil {
					t.Errorf("entry %d: %v", i+1, err)
				}
			}
		})
	}
}

func withSeq(e Entry, seq uint64) Entry {
	e.Seq = seq
	return e
}

// TestAppendStart: AppendStart takes the entry's seq and sends it with
// the log's later entries; its Pending, waited for on another goroutine
// (as a guest's call hands it off), commits them in one transaction, and
// every Wait answers the same; the store opened again holds both.
func TestAppendStart(t *testing.T) {
	s := testStore(t, Options{})
	l := openLog(t, s, "agent")
	if _, err := l.AppendLater(testEntry(0)); err != nil {
		t.Fatal(err)
	}
	before := s.Stats().Commits
	p, err := l.AppendStart(testEntry(1))
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		seq uint64
		err error
	}
	got := make(chan outcome)
	go func() {
		seq, err := p.Wait()
		got <- outcome{seq, err}
	}()
	o := <-got
	if o.err != nil || o.seq != 2 {
		t.Fatalf("Wait on another goroutine: seq %d, %v; want 2", o.seq, o.err)
	}
	if seq, err := p.Wait(); seq != 2 || err != nil {
		t.Errorf("second Wait: seq %d, %v; want 2, nil", seq, err)
	}
	if c := s.Stats().Commits - before; c != 1 {
		t.Errorf("%d commits for a later entry and a started one, want 1", c)
	}
	if n, _ := l.Len(); n != 2 {
		t.Errorf("Len %d, want 2", n)
	}
	s = reopen(t, s)
	l2 := openLog(t, s, "agent")
	defer l2.Close()
	if rec := l2.Recorded(); len(rec) != 2 {
		t.Fatalf("reopened: %d entries, want 2", len(rec))
	}
	if _, err := l2.AppendStart(Entry{}); err == nil {
		t.Error("AppendStart of an entry without a kind or call: no error")
	}
}
