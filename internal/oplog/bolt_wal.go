package oplog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"go.uber.org/zap"
)

// The wal of the bbolt file: every log's entries in one bucket, keyed by
// their position (8 bytes, big-endian, from the bucket's sequence: the
// order they were committed in), each value the log's id and the entry's
// seq (8 bytes each, big-endian) and then the entry. A log's bucket in
// "logs" holds its header and its id (8 bytes, from the sequence of
// "logs"). Where each log's entries are is kept in memory (walIndex),
// built by one scan of the wal at Open.

// errNoID is the error of a log whose bucket lacks its id.
var errNoID = fmt.Errorf("%w: its bucket has no id, by which its entries are found in the wal", ErrCorrupt)

// walPrefix is the size of a wal value before its entry: the log's id
// and the entry's seq.
const walPrefix = 16

// walFill is the wal's fill percent: its keys only grow, so its pages are
// filled before they split rather than split in half.
const walFill = 1.0

// walIndex is where one log's entries are in the wal.
type walIndex struct {
	pos   []uint64 // in the order they were committed: seq order
	bytes int64    // the entries' stored size (without the prefix)
}

func posKey(p uint64) []byte { return binary.BigEndian.AppendUint64(nil, p) }

// logID is the id of the log of bucket lb.
func logID(lb *bolt.Bucket) (uint64, bool) {
	v := lb.Get(idKey)
	if len(v) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(v), true
}

// positions are where the entries of the log id are in the wal, a copy.
func (b *boltBackend) positions(id uint64) []uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w := b.wal[id]; w != nil {
		return slices.Clone(w.pos)
	}
	return nil
}

// load makes the file's buckets, moves the entries of the logs written
// before the wal into it (migrate), and builds the index of the wal. A
// wal value that names no log, or is too short to, is logged and left:
// the log it belonged to, if any, then misses an entry, which its Open
// reports.
func (b *boltBackend) load() error {
	err := b.db.Update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(rootBucket)
		if err != nil {
			return err
		}
		wal, err := tx.CreateBucketIfNotExists(walBucket)
		if err != nil {
			return err
		}
		wal.FillPercent = walFill
		if _, err := tx.CreateBucketIfNotExists(journalBucket); err != nil {
			return err
		}
		return b.migrate(root, wal)
	})
	if err != nil {
		return err
	}
	b.wal = map[uint64]*walIndex{}
	var orphans []uint64
	err = b.db.View(func(tx *bolt.Tx) error {
		if err := b.index(tx); err != nil {
			return err
		}
		orphans, err = b.orphans(tx)
		return err
	})
	if err != nil || len(orphans) == 0 {
		return err
	}
	return b.db.Update(func(tx *bolt.Tx) error { return b.dropOrphans(tx, orphans) })
}

// index builds b.wal from the wal of tx.
func (b *boltBackend) index(tx *bolt.Tx) error {
	return tx.Bucket(walBucket).ForEach(func(k, v []byte) error {
		if len(k) != 8 || len(v) < 8 {
			b.log.Warn("wal value of no log", zap.String("file", b.path), zap.Binary("position", k), zap.Int("bytes", len(v)))
			return nil
		}
		id := binary.BigEndian.Uint64(v)
		w := b.wal[id]
		if w == nil {
			w = &walIndex{}
			b.wal[id] = w
		}
		w.pos = append(w.pos, binary.BigEndian.Uint64(k))
		w.bytes += int64(max(len(v)-walPrefix, 0))
		return nil
	})
}

// orphans are the ids of the index that no log of tx has (a log removed
// while its id was unreadable).
func (b *boltBackend) orphans(tx *bolt.Tx) ([]uint64, error) {
	root := tx.Bucket(rootBucket)
	held := map[uint64]bool{}
	err := root.ForEachBucket(func(k []byte) error {
		if id, ok := logID(root.Bucket(k)); ok {
			held[id] = true
		}
		return nil
	})
	var out []uint64
	for id := range b.wal {
		if !held[id] {
			out = append(out, id)
		}
	}
	return out, err
}

// dropOrphans deletes from the wal of tx the entries of the ids.
func (b *boltBackend) dropOrphans(tx *bolt.Tx, ids []uint64) error {
	wal := tx.Bucket(walBucket)
	for _, id := range ids {
		w := b.wal[id]
		for _, p := range w.pos {
			if err := wal.Delete(posKey(p)); err != nil {
				return err
			}
		}
		delete(b.wal, id)
		b.log.Info("entries of no log dropped", zap.String("file", b.path), zap.Uint64("id", id), zap.Int("entries", len(w.pos)))
	}
	return nil
}

// migrate moves into wal the entries of each log of root that still has
// its own bucket of them (the layout before the wal), in seq order, and
// gives it an id; a key that is not a seq is dropped (its log then
// misses that entry).
func (b *boltBackend) migrate(root, wal *bolt.Bucket) error {
	var old [][]byte
	err := root.ForEachBucket(func(k []byte) error {
		if root.Bucket(k).Bucket(entriesBucket) != nil {
			old = append(old, k)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range old {
		lb := root.Bucket(k)
		id, ok := logID(lb)
		if !ok {
			if id, err = root.NextSequence(); err != nil {
				return err
			}
			if err := lb.Put(idKey, posKey(id)); err != nil {
				return err
			}
		}
		eb := lb.Bucket(entriesBucket)
		moved := 0
		err := eb.ForEach(func(seq, v []byte) error {
			if len(seq) != 8 || v == nil {
				b.log.Warn("entry dropped: its key is not a seq", zap.String("file", b.path), zap.String("key", string(k)), zap.Binary("entry_key", seq))
				return nil
			}
			p, err := wal.NextSequence()
			if err != nil {
				return err
			}
			moved++
			return wal.Put(posKey(p), walValue(id, binary.BigEndian.Uint64(seq), v))
		})
		if err != nil {
			return err
		}
		if err := lb.DeleteBucket(entriesBucket); err != nil {
			return err
		}
		b.log.Info("log moved into the wal", zap.String("file", b.path), zap.String("key", string(k)), zap.Int("entries", moved))
	}
	return nil
}

// walValue is the wal value of entry seq (encoded as v) of log id.
func walValue(id, seq uint64, v []byte) []byte {
	out := make([]byte, 0, walPrefix+len(v))
	out = binary.BigEndian.AppendUint64(out, id)
	out = binary.BigEndian.AppendUint64(out, seq)
	return append(out, v...)
}

// walTx is one commit's writes, and what they change of the index once
// it committed (done).
type walTx struct {
	b         *boltBackend
	root, wal *bolt.Bucket
	ids       map[string]uint64    // the logs met, by key: their ids
	added     map[uint64]*walIndex // entries appended, by log id
	gone      map[uint64]bool      // logs deleted
}

// apply makes r's write. A failure of r alone is reqErr; txErr fails the
// transaction.
func (t *walTx) apply(r *request) (reqErr, txErr error) {
	switch r.op {
	case opAppend:
		id, ok := t.ids[r.key]
		if !ok {
			lb := t.root.Bucket([]byte(r.key))
			if lb == nil {
				return errors.New("the log is not in the file"), nil
			}
			if id, ok = logID(lb); !ok {
				return errNoID, nil
			}
			t.ids[r.key] = id
		}
		p, err := t.wal.NextSequence()
		if err != nil {
			return nil, err
		}
		if err := t.wal.Put(posKey(p), walValue(id, r.seq, r.value)); err != nil {
			return nil, err
		}
		w := t.added[id]
		if w == nil {
			w = &walIndex{}
			t.added[id] = w
		}
		w.pos = append(w.pos, p)
		w.bytes += int64(len(r.value))
		return nil, nil
	case opCreate:
		lb, err := t.root.CreateBucket([]byte(r.key))
		if errors.Is(err, bolterrors.ErrBucketExists) {
			return errors.New("the log is already in the file"), nil
		} else if err != nil {
			return nil, err
		}
		id, err := t.root.NextSequence()
		if err != nil {
			return nil, err
		}
		if err := lb.Put(headerKey, r.value); err != nil {
			return nil, err
		}
		if err := lb.Put(idKey, posKey(id)); err != nil {
			return nil, err
		}
		t.ids[r.key] = id
		return nil, nil
	case opDelete:
		lb := t.root.Bucket([]byte(r.key))
		if lb == nil {
			return nil, nil
		}
		if id, ok := logID(lb); ok {
			for _, p := range t.b.positions(id) {
				if err := t.wal.Delete(posKey(p)); err != nil {
					return nil, err
				}
			}
			if w := t.added[id]; w != nil {
				for _, p := range w.pos {
					if err := t.wal.Delete(posKey(p)); err != nil {
						return nil, err
					}
				}
			}
			delete(t.added, id)
			t.gone[id] = true
		}
		delete(t.ids, r.key)
		return nil, t.root.DeleteBucket([]byte(r.key))
	}
	return nil, fmt.Errorf("unknown op %d", r.op)
}

// done applies the committed transaction's changes to the index.
func (t *walTx) done() {
	b := t.b
	b.mu.Lock()
	defer b.mu.Unlock()
	for id := range t.gone {
		delete(b.wal, id)
	}
	for id, a := range t.added {
		w := b.wal[id]
		if w == nil {
			w = &walIndex{}
			b.wal[id] = w
		}
		w.pos = append(w.pos, a.pos...)
		w.bytes += a.bytes
	}
}
