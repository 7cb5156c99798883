package oplog

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestMigrate: a file of the layout before the wal (each log's entries in
// a bucket of its own) opens with its logs whole: their entries move into
// the wal, appends go on from their last seq, and a log removed from it
// leaves nothing in the wal.
func TestMigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oplog.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucket(rootBucket)
		if err != nil {
			return err
		}
		for key, n := range map[string]int{"a": 3, "b/s": 2} {
			lb, err := root.CreateBucket([]byte(key))
			if err != nil {
				return err
			}
			if err := lb.Put(headerKey, appendHeader(nil, testHeader)); err != nil {
				return err
			}
			eb, err := lb.CreateBucket(entriesBucket)
			if err != nil {
				return err
			}
			for i := range n {
				e := testEntry(i)
				e.Seq = uint64(i + 1)
				if err := eb.Put(seqKey(e.Seq), appendEntry(nil, &e)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err := errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}

	s := testStore(t, Options{Path: path})
	sums, err := s.Summaries()
	if err != nil || len(sums) != 2 || sums[0].Entries != 3 || sums[1].Entries != 2 || sums[0].Bytes == 0 {
		t.Fatalf("Summaries after the move: %+v, %v", sums, err)
	}
	a := openLog(t, s, "a")
	checkRecorded(t, a, 3)
	if seq := mustAppend(t, a, testEntry(3)); seq != 4 {
		t.Errorf("append after the move: seq %d, want 4", seq)
	}
	a.Close()
	if err := s.Remove("b/s"); err != nil {
		t.Fatal(err)
	}

	s = reopen(t, s)
	a = openLog(t, s, "a")
	checkRecorded(t, a, 4)
	a.Close()
	path = s.Path()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(rootBucket).Bucket([]byte("a")).Bucket(entriesBucket) != nil {
			t.Error("the log kept its bucket of entries")
		}
		ids := map[uint64]int{}
		err := tx.Bucket(walBucket).ForEach(func(_, v []byte) error {
			ids[binary.BigEndian.Uint64(v)]++
			return nil
		})
		if id, _ := logID(tx.Bucket(rootBucket).Bucket([]byte("a"))); len(ids) != 1 || ids[id] != 4 {
			t.Errorf("the wal holds entries of logs %v, want 4 of a's (id %d) alone", ids, id)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOrphans: wal entries of an id no log has (a log removed while its
// id was unreadable) are dropped when the file is opened again.
func TestOrphans(t *testing.T) {
	s := testStore(t, Options{})
	fill(t, s, map[string]int{"a": 3})
	path := damage(t, s, func(tx *bolt.Tx) error { return tx.Bucket(rootBucket).DeleteBucket([]byte("a")) })
	s = testStore(t, Options{Path: path})
	b := s.b.(*journaled).b
	b.mu.Lock()
	left := len(b.wal)
	b.mu.Unlock()
	if left != 0 {
		t.Errorf("the index holds %d logs after the open, want none", left)
	}
	err := b.db.View(func(tx *bolt.Tx) error {
		if n := tx.Bucket(walBucket).Stats().KeyN; n != 0 {
			t.Errorf("the wal holds %d entries of no log", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
