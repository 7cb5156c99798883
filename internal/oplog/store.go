package oplog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
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

const (
	defaultMaxBatch = 1024
	// lockTimeout bounds the wait for the file's lock, which another
	// process (or another Store of this one) may hold.
	lockTimeout = time.Second
)

// Bucket and value names of the file; see the package doc.
var (
	rootBucket    = []byte("logs")
	headerKey     = []byte("header")
	entriesBucket = []byte("entries")
)

// Store is one bbolt file of logs. Its methods are safe for concurrent
// use.
type Store struct {
	db       *bolt.DB
	path     string
	log      *zap.Logger
	maxBatch int

	reqs    chan *request // to the committer, buffered (maxBatch)
	done    chan struct{} // closed by Close: the committer stops
	stopped chan struct{} // closed by the committer when it returns

	mu     sync.Mutex
	busy   map[string]bool // keys of open logs and of logs being removed
	closed bool

	closeOnce sync.Once
	closeErr  error

	appends, entries, bytes, commits atomic.Uint64
}

// Stats are a Store's counters since Open.
type Stats struct {
	Appends uint64 // calls of Log.Append, whatever their outcome
	Entries uint64 // entries committed (Appends that returned a seq)
	Bytes   uint64 // the stored size of those entries
	Commits uint64 // read-write transactions committed (of appends, and of creating and deleting logs)
}

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
	s := &Store{
		db:       db,
		path:     opts.Path,
		log:      lg.Named("oplog"),
		maxBatch: opts.MaxBatch,
		reqs:     make(chan *request, opts.MaxBatch),
		done:     make(chan struct{}),
		stopped:  make(chan struct{}),
		busy:     map[string]bool{},
	}
	go s.commitLoop()
	s.log.Debug("store open", zap.String("file", s.path))
	return s, nil
}

// Close stops the committer and closes the file. Appends waiting and later
// fail with ErrClosed, and so do the other methods, but Log.Close. Close is
// idempotent: a second call returns what the first did.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.done)
		<-s.stopped
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("oplog: %s: %w", s.path, err)
		}
		s.log.Debug("store closed", zap.String("file", s.path))
	})
	return s.closeErr
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// Stats are the store's counters since Open, each read atomically.
func (s *Store) Stats() Stats {
	return Stats{
		Appends: s.appends.Load(),
		Entries: s.entries.Load(),
		Bytes:   s.bytes.Load(),
		Commits: s.commits.Load(),
	}
}

// acquire marks key busy: an open log or one being removed.
func (s *Store) acquire(key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return s.errorf(key, ErrClosed)
	case s.busy[key]:
		return s.errorf(key, ErrBusy)
	}
	s.busy[key] = true
	return nil
}

// release undoes acquire.
func (s *Store) release(key string) {
	s.mu.Lock()
	delete(s.busy, key)
	s.mu.Unlock()
}

// errorf is err with the file and key before it.
func (s *Store) errorf(key string, err error) error {
	return fmt.Errorf("oplog: %s: log %q: %w", s.path, key, err)
}

// view runs fn in a read-only transaction on the root bucket.
func (s *Store) view(fn func(root *bolt.Bucket) error) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return fmt.Errorf("oplog: %s: %w", s.path, ErrClosed)
	}
	return s.db.View(func(tx *bolt.Tx) error { return fn(tx.Bucket(rootBucket)) })
}
