package oplog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	rootBucket    = []byte("logs")
	headerKey     = []byte("header")
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
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(rootBucket)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("oplog: %s: %w", opts.Path, err)
	}
	lg = lg.Named("oplog")
	s := newStore(&boltBackend{db: db, path: opts.Path, log: lg}, opts.Path, lg, opts.MaxBatch, bolt.MaxValueSize, "bbolt's limit")
	return s, nil
}

// boltBackend keeps the logs in a bbolt file: see the package doc.
type boltBackend struct {
	db   *bolt.DB
	path string
	log  *zap.Logger
}

func (b *boltBackend) close() error { return b.db.Close() }

// view runs fn in a read-only transaction on the root bucket.
func (b *boltBackend) view(fn func(root *bolt.Bucket) error) error {
	return b.db.View(func(tx *bolt.Tx) error { return fn(tx.Bucket(rootBucket)) })
}

func (b *boltBackend) read(key string) (st *stored, err error) {
	err = b.view(func(root *bolt.Bucket) error {
		st, err = readBolt(root, key)
		return err
	})
	return st, err
}

// readBolt reads and verifies the log key of root: nil if root holds
// none.
func readBolt(root *bolt.Bucket, key string) (*stored, error) {
	lb := root.Bucket([]byte(key))
	if lb == nil {
		return nil, nil
	}
	v, err := newVerifier(lb.Get(headerKey))
	if err != nil {
		return nil, err
	}
	eb := lb.Bucket(entriesBucket)
	if eb == nil {
		return nil, fmt.Errorf("%w: no bucket of entries", ErrCorrupt)
	}
	c := eb.Cursor()
	for k, val := c.First(); k != nil; k, val = c.Next() {
		if len(k) != 8 {
			return nil, v.badKey(fmt.Sprintf("a key of %d bytes (%q) where the entry should be", len(k), k))
		}
		seq := binary.BigEndian.Uint64(k)
		if err := v.next(seq); err != nil {
			return nil, err
		}
		if val == nil {
			return nil, corrupt(seq, "a bucket, not a value")
		}
		if err := v.add(seq, bytes.Clone(val)); err != nil {
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
			if eb := lb.Bucket(entriesBucket); eb != nil {
				c := eb.Cursor()
				for k, v := c.First(); k != nil; k, v = c.Next() {
					sum.Entries++
					sum.Bytes += int64(len(v))
				}
			}
			sums = append(sums, sum)
			return nil
		})
	})
	return sums, err
}

// commit writes batch in one transaction: bbolt fsyncs once per
// read-write transaction.
func (b *boltBackend) commit(batch []*request, errs []error) int {
	err := b.db.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket(rootBucket)
		logs := map[string]*bolt.Bucket{} // entries buckets met in this transaction
		for i, r := range batch {
			if errs[i] != nil {
				continue
			}
			var err error
			if errs[i], err = b.apply(root, logs, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.log.Error("commit failed", zap.String("file", b.path), zap.Int("batch", len(batch)), zap.Error(err))
		for i := range errs {
			errs[i] = fmt.Errorf("commit: %w", err)
		}
		return 0
	}
	return 1
}

// apply makes r's write in root. A failure of r alone is reqErr; txErr
// fails the transaction.
func (b *boltBackend) apply(root *bolt.Bucket, logs map[string]*bolt.Bucket, r *request) (reqErr, txErr error) {
	switch r.op {
	case opAppend:
		eb := logs[r.key]
		if eb == nil {
			if lb := root.Bucket([]byte(r.key)); lb != nil {
				eb = lb.Bucket(entriesBucket)
			}
			if eb == nil {
				return errors.New("the log is not in the file"), nil
			}
			eb.FillPercent = 0.9 // keys are appended in order
			logs[r.key] = eb
		}
		return nil, eb.Put(binary.BigEndian.AppendUint64(nil, r.seq), r.value)
	case opCreate:
		lb, err := root.CreateBucket([]byte(r.key))
		if errors.Is(err, bolterrors.ErrBucketExists) {
			return errors.New("the log is already in the file"), nil
		} else if err != nil {
			return nil, err
		}
		if err := lb.Put(headerKey, r.value); err != nil {
			return nil, err
		}
		eb, err := lb.CreateBucket(entriesBucket)
		if err != nil {
			return nil, err
		}
		eb.FillPercent = 0.9
		logs[r.key] = eb
		return nil, nil
	case opDelete:
		delete(logs, r.key)
		if err := root.DeleteBucket([]byte(r.key)); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
			return nil, err
		}
		return nil, nil
	}
	return nil, fmt.Errorf("unknown op %d", r.op)
}
