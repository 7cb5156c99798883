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

// seqKey is seq as an entries key.
func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

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
		mutate func(lb, eb *bolt.Bucket) error // of log "a": entries 1..5
		want   string                          // in the error
	}{
		{"data byte flipped", func(_, eb *bolt.Bucket) error { return eb.Put(seqKey(3), flip(eb.Get(seqKey(3)), -6)) },
			"at entry 3: checksum mismatch"},
		{"checksum flipped", func(_, eb *bolt.Bucket) error { return eb.Put(seqKey(3), flip(eb.Get(seqKey(3)), -1)) },
			"at entry 3: checksum mismatch"},
		{"unknown version", func(_, eb *bolt.Bucket) error { return eb.Put(seqKey(3), flip(eb.Get(seqKey(3)), 0)) },
			"at entry 3: unknown encoding version 254"},
		{"truncated", func(_, eb *bolt.Bucket) error { return eb.Put(seqKey(3), eb.Get(seqKey(3))[:3]) },
			"at entry 3: value of 3 bytes"},
		{"empty", func(_, eb *bolt.Bucket) error { return eb.Put(seqKey(3), []byte{}) },
			"at entry 3: value of 0 bytes"},
		{"bad kind, good checksum", func(_, eb *bolt.Bucket) error {
			return eb.Put(seqKey(3), appendEntry(nil, &Entry{Seq: 3, Kind: 9}))
		}, "at entry 3: kind(9) is not a kind of entry"},
		{"missing seq", func(_, eb *bolt.Bucket) error { return eb.Delete(seqKey(3)) },
			"at entry 3: missing (the next stored is 4)"},
		{"first missing", func(_, eb *bolt.Bucket) error { return eb.Delete(seqKey(1)) },
			"at entry 1: missing"},
		{"entry of another seq", func(_, eb *bolt.Bucket) error { return eb.Put(seqKey(3), bytes.Clone(eb.Get(seqKey(2)))) },
			"at entry 3: holds entry 2"},
		{"seq 0", func(_, eb *bolt.Bucket) error { return eb.Put(seqKey(0), bytes.Clone(eb.Get(seqKey(1)))) },
			"at entry 0: out of place"},
		{"short key", func(_, eb *bolt.Bucket) error { return eb.Put([]byte("x"), []byte("y")) },
			"at entry 6: a key of 1 bytes"},
		{"bucket among entries", func(_, eb *bolt.Bucket) error { _, err := eb.CreateBucket(seqKey(6)); return err },
			"at entry 6: a bucket"},
		{"header flipped", func(lb, _ *bolt.Bucket) error { return lb.Put(headerKey, flip(lb.Get(headerKey), 2)) },
			"corrupt: header: checksum mismatch"},
		{"header missing", func(lb, _ *bolt.Bucket) error { return lb.Delete(headerKey) },
			"corrupt: header: value of 0 bytes"},
		{"entries missing", func(lb, _ *bolt.Bucket) error { return lb.DeleteBucket(entriesBucket) },
			"corrupt: no bucket of entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testStore(t, Options{})
			for k, n := range map[string]int{"a": 5, "b": 2} {
				l := openLog(t, s, k)
				for i := range n {
					mustAppend(t, l, testEntry(i))
				}
				l.Close()
			}
			path := s.Path()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bolt.Tx) error {
				lb := tx.Bucket(rootBucket).Bucket([]byte("a"))
				return tt.mutate(lb, lb.Bucket(entriesBucket))
			})
			if err := errors.Join(err, db.Close()); err != nil {
				t.Fatal(err)
			}

			core, logs := observer.New(zap.WarnLevel)
			s = testStore(t, Options{Path: path, Log: zap.New(core)})
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
