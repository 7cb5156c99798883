package oplog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// seqKey is seq as an entries key (of the layout before the wal).
func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

// walLog is one log's entries in the wal of a read-write transaction, by
// seq, for a test to damage.
type walLog struct {
	wal *bolt.Bucket
	id  uint64
	pos map[uint64][]byte // the wal key of each seq
}

// walLogOf is the log key of tx's wal.
func walLogOf(t *testing.T, tx *bolt.Tx, key string) walLog {
	t.Helper()
	id, ok := logID(tx.Bucket(rootBucket).Bucket([]byte(key)))
	if !ok {
		t.Fatalf("log %q has no id", key)
	}
	w := walLog{wal: tx.Bucket(walBucket), id: id, pos: map[uint64][]byte{}}
	err := w.wal.ForEach(func(k, v []byte) error {
		if binary.BigEndian.Uint64(v) == id {
			w.pos[binary.BigEndian.Uint64(v[8:walPrefix])] = bytes.Clone(k)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// get is entry seq's value.
func (w walLog) get(seq uint64) []byte { return bytes.Clone(w.wal.Get(w.pos[seq])[walPrefix:]) }

// put makes v the value of entry seq where it is.
func (w walLog) put(seq uint64, v []byte) error { return w.wal.Put(w.pos[seq], walValue(w.id, seq, v)) }

// del deletes entry seq.
func (w walLog) del(seq uint64) error { return w.wal.Delete(w.pos[seq]) }

// add appends raw to the wal, as if committed last.
func (w walLog) add(raw []byte) error {
	p, err := w.wal.NextSequence()
	if err != nil {
		return err
	}
	return w.wal.Put(posKey(p), raw)
}

// fill appends n entries to each log of s named in logs, and closes them.
func fill(t *testing.T, s *Store, logs map[string]int) {
	t.Helper()
	for k, n := range logs {
		l := openLog(t, s, k)
		for i := range n {
			mustAppend(t, l, testEntry(i))
		}
		l.Close()
	}
}

// damage closes s and runs fn in a read-write transaction of its file,
// behind the store's back; it returns the file.
func damage(t *testing.T, s *Store, fn func(tx *bolt.Tx) error) string {
	t.Helper()
	path := s.Path()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(db.Update(fn), db.Close()); err != nil {
		t.Fatal(err)
	}
	return path
}

// flip is v with byte i (from the end if negative) inverted.
func flip(v []byte, i int) []byte {
	v = bytes.Clone(v)
	if i < 0 {
		i += len(v)
	}
	v[i] ^= 0xff
	return v
}

func TestCorrupt(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(lb *bolt.Bucket, w walLog) error // of log "a": entries 1..5
		want   string                                // in the error
	}{
		{"data byte flipped", func(_ *bolt.Bucket, w walLog) error { return w.put(3, flip(w.get(3), -6)) },
			"at entry 3: checksum mismatch"},
		{"checksum flipped", func(_ *bolt.Bucket, w walLog) error { return w.put(3, flip(w.get(3), -1)) },
			"at entry 3: checksum mismatch"},
		{"unknown version", func(_ *bolt.Bucket, w walLog) error { return w.put(3, flip(w.get(3), 0)) },
			"at entry 3: unknown encoding version 254"},
		{"truncated", func(_ *bolt.Bucket, w walLog) error { return w.put(3, w.get(3)[:3]) },
			"at entry 3: value of 3 bytes"},
		{"empty", func(_ *bolt.Bucket, w walLog) error { return w.put(3, []byte{}) },
			"at entry 3: value of 0 bytes"},
		{"bad kind, good checksum", func(_ *bolt.Bucket, w walLog) error {
			return w.put(3, appendEntry(nil, &Entry{Seq: 3, Kind: 9}))
		}, "at entry 3: kind(9) is not a kind of entry"},
		{"missing seq", func(_ *bolt.Bucket, w walLog) error { return w.del(3) },
			"at entry 3: missing (the next stored is 4)"},
		{"first missing", func(_ *bolt.Bucket, w walLog) error { return w.del(1) },
			"at entry 1: missing"},
		{"entry of another seq", func(_ *bolt.Bucket, w walLog) error { return w.put(3, w.get(2)) },
			"at entry 3: holds entry 2"},
		{"seq 0", func(_ *bolt.Bucket, w walLog) error { return w.add(walValue(w.id, 0, w.get(1))) },
			"at entry 0: out of place"},
		{"short value", func(_ *bolt.Bucket, w walLog) error { return w.add(append(posKey(w.id), 1, 2, 3)) },
			"at entry 6: a value of 11 bytes"},
		{"header flipped", func(lb *bolt.Bucket, _ walLog) error { return lb.Put(headerKey, flip(lb.Get(headerKey), 2)) },
			"corrupt: header: checksum mismatch"},
		{"header missing", func(lb *bolt.Bucket, _ walLog) error { return lb.Delete(headerKey) },
			"corrupt: header: value of 0 bytes"},
		{"id missing", func(lb *bolt.Bucket, _ walLog) error { return lb.Delete(idKey) },
			"corrupt: its bucket has no id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testStore(t, Options{})
			fill(t, s, map[string]int{"a": 5, "b": 2})
			path := damage(t, s, func(tx *bolt.Tx) error {
				return tt.mutate(tx.Bucket(rootBucket).Bucket([]byte("a")), walLogOf(t, tx, "a"))
			})

			core, logs := observer.New(zap.WarnLevel)
			s = testStore(t, Options{Path: path, Log: zap.New(core)})
			var err error
			for range 2 { // the failed Open leaves the key free
				_, err = s.Open("a", testHeader)
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Open of the corrupt log: %v, want ErrCorrupt", err)
				}
			}
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, `log "a" is corrupt`) || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q does not name the file, the key and %q", msg, tt.want)
			}
			if e := logs.FilterLoggerName("oplog").FilterField(zap.String("key", "a")).All(); len(e) == 0 {
				t.Errorf("the corrupt log was not logged; logged %v", logs.All())
			}
			l := openLog(t, s, "b")
			if len(l.Recorded()) != 2 {
				t.Errorf("the other log recorded %d entries, want 2", len(l.Recorded()))
			}
			mustAppend(t, l, testEntry(2))
			l.Close()
			if keys, err := s.Keys(); err != nil || !slices.Equal(keys, []string{"a", "b"}) {
				t.Errorf("Keys: %q, %v", keys, err)
			}
			if _, err := s.Summaries(); err != nil {
				t.Errorf("Summaries: %v", err)
			}
			if err := s.Remove("a"); err != nil {
				t.Fatalf("Remove of the corrupt log: %v", err)
			}
			l = openLog(t, s, "a")
			if len(l.Recorded()) != 0 {
				t.Errorf("the removed log, opened again, recorded %d entries", len(l.Recorded()))
			}
			l.Close()
		})
	}
}
