package oplog

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
)

const defaultMaxBatch = 1024

// Store is a set of logs kept in one bbolt file (Open) or under a prefix
// of etcd (OpenEtcd). Its methods are safe for concurrent use.
type Store struct {
	b    backend
	path string // the file, or "etcd:PREFIX"
	log  *zap.Logger
	lim  limits

	c committer // the group commit (commit.go)

	mu     sync.Mutex
	busy   map[string]bool // keys of open logs and of logs being removed
	closed bool

	closeOnce sync.Once
	closeErr  error

	n counters
}

// limits bound a Store's batches and entries: maxBatch the requests of
// one transaction, maxEntry an entry's encoded size; name says whose limit
// maxEntry is, for checkEntry's error.
type limits struct {
	maxBatch, maxEntry int
	name               string
}

// counters are a Store's Stats.
type counters struct {
	appends, entries, bytes, commits atomic.Uint64
}

// Stats are a Store's counters since Open.
type Stats struct {
	Appends uint64 // calls of Log.Append, whatever their outcome
	Entries uint64 // entries committed (Appends that returned a seq)
	Bytes   uint64 // the stored size of those entries
	Commits uint64 // batches made durable (of appends, and of creating and deleting logs): journal records over bbolt (its folds into the file not counted), transactions over etcd
}

// newStore is a Store over b, its committer started.
func newStore(b backend, path string, lg *zap.Logger, maxBatch, maxEntry int, limitName string) *Store {
	s := &Store{
		b:    b,
		path: path,
		log:  lg,
		lim:  limits{maxBatch: maxBatch, maxEntry: maxEntry, name: limitName},
		c:    committer{idle: make(chan struct{}), wake: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})},
		busy: map[string]bool{},
	}
	go s.commitLoop()
	s.log.Debug("store open", zap.String("file", s.path))
	return s
}

// Close stops the committer, once the writes already sent are committed,
// and closes the file (an etcd store leaves its client open). Later
// Appends fail with ErrClosed, and so do the other methods, but Log.Close.
// Close is idempotent: a second call returns what the first did.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.c.mu.Lock()
		s.c.closing = true
		held := s.c.baton
		s.c.mu.Unlock()
		if held {
			<-s.c.idle
		}
		close(s.c.done)
		<-s.c.stopped
		if err := s.b.close(); err != nil {
			s.closeErr = fmt.Errorf("oplog: %s: %w", s.path, err)
		}
		s.log.Debug("store closed", zap.String("file", s.path))
	})
	return s.closeErr
}

// Path is the store's file, or for an etcd store "etcd:" and its prefix
// (e.g. "etcd:/toolhostd/oplog"). Errors name the store by it.
func (s *Store) Path() string { return s.path }

// Stats are the store's counters since Open, each read atomically.
func (s *Store) Stats() Stats {
	return Stats{
		Appends: s.n.appends.Load(),
		Entries: s.n.entries.Load(),
		Bytes:   s.n.bytes.Load(),
		Commits: s.n.commits.Load(),
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

// checkOpen is ErrClosed once the store is closed, with the file.
func (s *Store) checkOpen() error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return fmt.Errorf("oplog: %s: %w", s.path, ErrClosed)
	}
	return nil
}

// read reads and verifies the log key (see backend.read); the error names
// the file and the key, but ErrClosed's.
func (s *Store) read(key string) (*stored, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	st, err := s.b.read(key)
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			return nil, fmt.Errorf("oplog: %s: log %q is %w", s.path, key, err)
		}
		return nil, s.errorf(key, err)
	}
	return st, nil
}
