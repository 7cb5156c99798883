package oplog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"go.uber.org/zap"
)

// Options configure Open.
type Options struct {
	// Path is the bbolt file. It is created, mode 0600, if missing, and
	// its directory, mode 0700, if that is missing too.
	Path string
	// Log receives the store's messages; nil: none.
	Log *zap.Logger
	// MaxBatch bounds how many appends one transaction takes (0: 1024).
	MaxBatch int
}

// lockTimeout bounds the wait for the file's lock, which another process
// (or another Store of this one) may hold.
const lockTimeout = time.Second

// Bucket and value names of the file; see the package doc.
var (
	rootBucket = []byte("logs")
	walBucket  = []byte("wal")
	headerKey  = []byte("header")
	idKey      = []byte("id")
	// entriesBucket is where a log kept its entries before the wal: Open
	// moves them into it (migrate).
	entriesBucket = []byte("entries")
)

// Open opens the store at opts.Path, creating the file if it is missing,
// and starts its committer; Close stops it. A file locked by another
// process (or by another Store of this one) is an error after about a
// second, not a wait.
func Open(opts Options) (*Store, error) {
	if opts.Path == "" {
		return nil, errors.New("oplog: no path for the store")
	}
	if opts.MaxBatch < 0 {
		return nil, fmt.Errorf("oplog: %s: max batch %d is negative", opts.Path, opts.MaxBatch)
	}
	if opts.MaxBatch == 0 {
		opts.MaxBatch = defaultMaxBatch
	}
	lg := opts.Log
	if lg == nil {
		lg = zap.NewNop()
	}
	if err := os.MkdirAll(filepath.Dir(opts.Path), 0o700); err != nil {
		return nil, fmt.Errorf("oplog: %w", err)
	}
	db, err := bolt.Open(opts.Path, 0o600, &bolt.Options{
		Timeout: lockTimeout,
		// The freelist is rebuilt on open rather than written at each
		// commit: less to write per fsync.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("oplog: %s is locked by another process, or is open in another Store of this one: %w", opts.Path, err)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrChecksum), errors.Is(err, bolterrors.ErrVersionMismatch):
		return nil, fmt.Errorf("oplog: %s is corrupt or not a bbolt file: %w", opts.Path, err)
	case err != nil:
		return nil, fmt.Errorf("oplog: %s: %w", opts.Path, err)
	}
	lg = lg.Named("oplog")
	b := &boltBackend{db: db, path: opts.Path, log: lg}
	if err := b.load(); err != nil {
		db.Close()
		return nil, fmt.Errorf("oplog: %s: %w", opts.Path, err)
	}
	jb, err := openJournaled(b)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("oplog: %s: %w", opts.Path, err)
	}
	s := newStore(jb, opts.Path, lg, opts.MaxBatch, bolt.MaxValueSize-walPrefix, "bbolt's limit")
	return s, nil
}

// boltBackend keeps the logs in a bbolt file: see the package doc.
type boltBackend struct {
	db   *bolt.DB
	path string
	log  *zap.Logger

	mu sync.Mutex // guards wal
	// wal is where each log's entries are in the wal, by the log's id
	// (built by load, kept by commit).
	wal map[uint64]*walIndex
}

func (b *boltBackend) close() error { return b.db.Close() }

// view runs fn in a read-only transaction on the root bucket.
func (b *boltBackend) view(fn func(root *bolt.Bucket) error) error {
	return b.db.View(func(tx *bolt.Tx) error { return fn(tx.Bucket(rootBucket)) })
}

// read reads and verifies the log key: its header, then its entries in
// the wal in the order they were committed. The positions are taken
// before the transaction begins, so that it sees every one (a log
// deleted meanwhile is gone in it altogether).
func (b *boltBackend) read(key string) (st *stored, err error) {
	var pos []uint64
	var id uint64
	err = b.db.View(func(tx *bolt.Tx) error {
		lb := tx.Bucket(rootBucket).Bucket([]byte(key))
		if lb == nil {
			return nil
		}
		var ok bool
		if id, ok = logID(lb); ok {
			pos = b.positions(id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = b.db.View(func(tx *bolt.Tx) error {
		st, err = readBolt(tx, key, id, pos)
		return err
	})
	return st, err
}

// readBolt reads and verifies the log key of tx, whose id is id and whose
// entries are at the wal positions pos: nil if tx holds no such log.
func readBolt(tx *bolt.Tx, key string, id uint64, pos []uint64) (*stored, error) {
	lb := tx.Bucket(rootBucket).Bucket([]byte(key))
	if lb == nil {
		return nil, nil
	}
	v, err := newVerifier(lb.Get(headerKey))
	if err != nil {
		return nil, err
	}
	if got, ok := logID(lb); !ok {
		return nil, errNoID
	} else if got != id {
		return nil, nil // deleted and created again since the positions were read
	}
	wal := tx.Bucket(walBucket)
	for _, p := range pos {
		val := wal.Get(posKey(p))
		if val == nil {
			continue // past the log's end in this transaction
		}
		if len(val) < walPrefix {
			return nil, v.badKey(fmt.Sprintf("a value of %d bytes where the entry should be", len(val)))
		}
		seq := binary.BigEndian.Uint64(val[8:walPrefix])
		if err := v.next(seq); err != nil {
			return nil, err
		}
		if err := v.add(seq, bytes.Clone(val[walPrefix:])); err != nil {
			return nil, err
		}
	}
	return v.st, nil
}

func (b *boltBackend) keys() ([]string, error) {
	var keys []string
	err := b.view(func(root *bolt.Bucket) error {
		return root.ForEachBucket(func(k []byte) error {
			keys = append(keys, string(k))
			return nil
		})
	})
	return keys, err
}

// summaries reads the headers; the entries and their sizes are the wal
// index's.
func (b *boltBackend) summaries() ([]Summary, error) {
	var sums []Summary
	err := b.view(func(root *bolt.Bucket) error {
		return root.ForEachBucket(func(k []byte) error {
			lb := root.Bucket(k)
			sum := Summary{Key: string(k)}
			h, err := decodeHeader(lb.Get(headerKey))
			if err != nil {
				b.log.Warn("corrupt log header", zap.String("file", b.path), zap.String("key", sum.Key), zap.Error(err))
			}
			sum.Header = h
			if id, ok := logID(lb); ok {
				b.mu.Lock()
				if w := b.wal[id]; w != nil {
					sum.Entries, sum.Bytes = len(w.pos), w.bytes
				}
				b.mu.Unlock()
			}
			sums = append(sums, sum)
			return nil
		})
	})
	return sums, err
}

// commit writes batch in one transaction: bbolt fsyncs once per
// read-write transaction. The appends of every log go to the end of the
// wal, so that a batch of many logs' appends dirties about as many pages
// as one log's would.
func (b *boltBackend) commit(batch []*request, errs []error) int {
	if err := b.update(batch, errs, nil); err != nil {
		for i := range errs {
			errs[i] = fmt.Errorf("commit: %w", err)
		}
		return 0
	}
	return 1
}

// update writes batch in one transaction, in order, setting errs[i] for
// each request that fails alone (a request whose errs[i] is already set
// is not written), and runs also (if not nil) in it before it commits.
// It returns the transaction's failure, logged.
func (b *boltBackend) update(batch []*request, errs []error, also func(tx *bolt.Tx) error) error {
	t := &walTx{b: b, ids: map[string]uint64{}, added: map[uint64]*walIndex{}, gone: map[uint64]bool{}}
	err := b.db.Update(func(tx *bolt.Tx) error {
		t.root, t.wal = tx.Bucket(rootBucket), tx.Bucket(walBucket)
		t.wal.FillPercent = walFill
		for i, r := range batch {
			if errs[i] != nil {
				continue
			}
			var err error
			if errs[i], err = t.apply(r); err != nil {
				return err
			}
		}
		if also != nil {
			return also(tx)
		}
		return nil
	})
	if err != nil {
		b.log.Error("commit failed", zap.String("file", b.path), zap.Int("batch", len(batch)), zap.Error(err))
		return err
	}
	t.done()
	return nil
}
