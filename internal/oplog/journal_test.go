package oplog

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// snapshot copies the files of s (bbolt's and the journal's) while it is
// open, as a crash would leave them: no fold, no Close. It returns the
// copy's path.
func snapshot(t *testing.T, s *Store) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "oplog.db")
	for _, suffix := range []string{"", "-journal"} {
		b, err := os.ReadFile(s.Path() + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// walEntries is how many entries the wal of the bbolt file at path holds.
func walEntries(t *testing.T, path string) int {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	err = db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(walBucket).Stats().KeyN
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// tearLast flips a byte of the payload of the journal's last record.
func tearLast(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path+"-journal", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	gen, first, ok := parseJournalHeader(buf)
	if !ok {
		t.Fatal("the journal's header does not verify")
	}
	recs, end := scanJournal(buf, gen, first)
	if len(recs) == 0 {
		t.Fatal("the journal holds no record")
	}
	last := recs[len(recs)-1]
	at := end - int64(len(last.payload)/2) - 1
	if _, err := f.WriteAt([]byte{buf[at] ^ 0xff}, at); err != nil {
		t.Fatal(err)
	}
}

// bigEntry is an entry of n bytes of data.
func bigEntry(i, n int) Entry {
	e := testEntry(i)
	e.Data = bytes.Repeat([]byte{byte('a' + i%26)}, n)
	return e
}

// TestJournalCrash: what an Append acknowledged is in the files a crash
// leaves (a copy of them taken while the store is open), though bbolt's
// holds none of it yet, and a store opened on them has every entry, once,
// in order; a record torn by the crash is dropped with what followed it.
func TestJournalCrash(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []Entry // appended to log "a" in turn
		tear    bool    // flip a byte of the journal's last record
		want    int     // entries of "a" after the crash
		folded  bool    // bbolt's file holds entries at the crash (a fold or a direct commit)
	}{
		{name: "appends", entries: entries(50, 0), want: 50},
		{name: "last record torn", entries: entries(50, 0), tear: true, want: 49},
		// 96 entries of 64 KiB: the journal (1 MiB) fills, is folded
		// into bbolt and starts again, in its next generation, over its
		// earlier records.
		{name: "journal full", entries: entries(96, 64<<10), want: 96, folded: true},
		{name: "entry larger than the journal", entries: append(entries(3, 0), append([]Entry{bigEntry(3, journalSize+1)}, entries(3, 0)...)...), want: 7, folded: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testStore(t, Options{})
			l := openLog(t, s, "a")
			for _, e := range tc.entries {
				mustAppend(t, l, e)
			}
			path := snapshot(t, s)
			l.Close()
			if n := walEntries(t, path); (n > 0) != tc.folded || n >= len(tc.entries) {
				t.Errorf("bbolt's file holds %d entries at the crash, want %s", n, map[bool]string{false: "none", true: "some, not all"}[tc.folded])
			}
			if tc.tear {
				tearLast(t, path)
			}
			c := testStore(t, Options{Path: path})
			got := openLog(t, c, "a")
			defer got.Close()
			rec := got.Recorded()
			if len(rec) != tc.want {
				t.Fatalf("after the crash the log holds %d entries, want %d", len(rec), tc.want)
			}
			for i, e := range rec {
				if err := sameEntry(e, withSeq(tc.entries[i], uint64(i+1))); err != nil {
					t.Errorf("entry %d: %v", i+1, err)
				}
			}
			// The store goes on from there: the next append is the next seq.
			if seq := mustAppend(t, got, testEntry(0)); seq != uint64(tc.want+1) {
				t.Errorf("the first append after the crash: seq %d, want %d", seq, tc.want+1)
			}
		})
	}
}

// entries are n test entries, of size bytes of data each if size > 0.
func entries(n, size int) []Entry {
	out := make([]Entry, n)
	for i := range out {
		out[i] = testEntry(i)
		if size > 0 {
			out[i] = bigEntry(i, size)
		}
	}
	return out
}

// TestJournalDeleteAndCreate: creations and deletions of logs go through
// the journal too: after a crash a log deleted stays deleted, one created
// is there, and a log deleted and created again has its second life's
// entries alone.
func TestJournalDeleteAndCreate(t *testing.T) {
	s := testStore(t, Options{})
	fill(t, s, map[string]int{"kept": 2, "again": 3})
	gone := openLog(t, s, "gone")
	mustAppend(t, gone, testEntry(0))
	if err := gone.Delete(); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("again"); err != nil {
		t.Fatal(err)
	}
	fill(t, s, map[string]int{"again": 1})
	c := testStore(t, Options{Path: snapshot(t, s)})
	keys, err := c.Keys()
	if err != nil || !slices.Equal(keys, []string{"again", "kept"}) {
		t.Fatalf("keys after the crash: %v %v, want [again kept]", keys, err)
	}
	for key, want := range map[string]int{"kept": 2, "again": 1} {
		_, es, err := c.Entries(key)
		if err != nil || len(es) != want {
			t.Errorf("log %q after the crash: %d entries, %v; want %d", key, len(es), err, want)
		}
	}
}

// TestJournalClosedClean: a store closed leaves everything in bbolt's
// file, which a reader of it alone (as tests and tools do) sees whole.
func TestJournalClosedClean(t *testing.T) {
	s := testStore(t, Options{})
	fill(t, s, map[string]int{"a": 5, "b": 7})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := walEntries(t, s.Path()); n != 12 {
		t.Errorf("bbolt's file holds %d entries after Close, want 12", n)
	}
}

// TestJournalBatchCodec: a record's payload decodes to the requests it
// was made of; cut short or with bytes after, it is an error.
func TestJournalBatchCodec(t *testing.T) {
	reqs := []*request{
		{op: opCreate, key: "agent/s1", value: []byte("header")},
		{op: opAppend, key: "agent/s1", seq: 1, value: []byte("entry one")},
		{op: opAppend, key: "agent/s1", seq: 300, value: nil},
		{op: opDelete, key: "other"},
	}
	b := appendJournalBatch(nil, reqs)
	got, err := decodeJournalBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(reqs) {
		t.Fatalf("decoded %d requests, want %d", len(got), len(reqs))
	}
	for i, r := range got {
		w := reqs[i]
		if r.op != w.op || r.key != w.key || r.seq != w.seq || !bytes.Equal(r.value, w.value) {
			t.Errorf("request %d: %+v, want %+v", i, r, w)
		}
	}
	for _, bad := range [][]byte{b[:len(b)-1], append(slices.Clone(b), 0), {}, {5, byte(opDelete + 1)}} {
		if _, err := decodeJournalBatch(bad); err == nil {
			t.Errorf("decodeJournalBatch(%x): no error", bad)
		}
	}
}

// FuzzJournal: any bytes as a journal scan without a panic, each record
// within the buffer and its seq the next; any payload decodes or fails.
func FuzzJournal(f *testing.F) {
	j := make([]byte, journalHeaderSize)
	copy(j, journalMagic)
	binary.BigEndian.PutUint64(j[4:], 1)
	binary.BigEndian.PutUint64(j[12:], 7)
	binary.BigEndian.PutUint32(j[20:], crc32.Checksum(j[:20], castagnoli))
	f.Add(j)
	f.Add(appendJournalBatch(nil, []*request{{op: opAppend, key: "a", seq: 1, value: []byte("x")}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeJournalBatch(b)
		gen, first, ok := parseJournalHeader(b)
		if !ok {
			return
		}
		recs, end := scanJournal(b, gen, first)
		if end > int64(len(b)) && len(recs) > 0 {
			t.Fatalf("the scan ends at %d, past the buffer's %d bytes", end, len(b))
		}
		for i, r := range recs {
			if r.seq != first+uint64(i) {
				t.Fatalf("record %d has seq %d, want %d", i, r.seq, first+uint64(i))
			}
			_, _ = decodeJournalBatch(r.payload)
		}
	})
}

// TestJournalOfAnotherFile: a journal whose records do not follow the
// bbolt file's last folded one (the file put back from an older copy) is
// left, not folded in after a gap: the store opens with what the file
// holds.
func TestJournalOfAnotherFile(t *testing.T) {
	s := testStore(t, Options{})
	fill(t, s, map[string]int{"a": 3})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	older, err := os.ReadFile(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	s = testStore(t, Options{Path: s.Path()})
	fill(t, s, map[string]int{"b": 2})
	s = reopen(t, s)
	fill(t, s, map[string]int{"c": 1})
	path := snapshot(t, s)
	if err := os.WriteFile(path, older, 0o600); err != nil {
		t.Fatal(err)
	}
	c := testStore(t, Options{Path: path})
	keys, err := c.Keys()
	if err != nil || !slices.Equal(keys, []string{"a"}) {
		t.Errorf("keys: %v %v, want [a] (the older file's alone)", keys, err)
	}
}

// TestJournalWriteFails: once a record's write fails (its file closed
// behind the store's back), its outcome is unknown, so every later write
// of the store fails too, naming the journal, even with the file back;
// what was synced before is still read (folded into bbolt), and is there
// after the store is opened again.
func TestJournalWriteFails(t *testing.T) {
	s := testStore(t, Options{})
	l := openLog(t, s, "a")
	mustAppend(t, l, testEntry(0))
	mustAppend(t, l, testEntry(1))
	jb := s.b.(*journaled)
	jb.mu.Lock()
	jb.j.f.Close()
	jb.mu.Unlock()
	if _, err := l.Append(testEntry(2)); err == nil || !strings.Contains(err.Error(), "journal") {
		t.Errorf("Append after the journal's file closed: %v, want an error naming the journal", err)
	}
	// The file back, writable: the store still refuses, since the failed
	// record's outcome is unknown.
	f, err := os.OpenFile(jb.j.path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	jb.mu.Lock()
	jb.j.f = f
	jb.mu.Unlock()
	if _, err := s.Open("b", testHeader); err == nil || !strings.Contains(err.Error(), "journal") {
		t.Errorf("Open of a new log after the failure: %v, want the journal's error", err)
	}
	if _, es, err := s.Entries("a"); err != nil || len(es) != 2 {
		t.Errorf("Entries after the failure: %d, %v; want the 2 synced before it", len(es), err)
	}
	l.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c := testStore(t, Options{Path: s.Path()})
	if _, es, err := c.Entries("a"); err != nil || len(es) != 2 {
		t.Errorf("Entries after opening again: %d, %v; want 2", len(es), err)
	}
}
