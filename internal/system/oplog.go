package system

import (
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/oplog"
)

// oplogs is the durable agents' oplog store (oplog.db in the state
// directory; in a cluster, etcd under Config.OplogPrefix), opened by the
// first durable instance: a config without one never creates the file,
// and a reload that adds one opens it then.
type oplogs struct {
	mu     sync.Mutex
	st     *oplog.Store
	closed bool
}

// Oplog is the durable agents' oplog store, opened on first use; Close
// closes it.
func (s *System) Oplog() (*oplog.Store, error) {
	o := &s.stores.oplogs
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.closed:
		return nil, fmt.Errorf("oplog: %w", oplog.ErrClosed)
	case o.st != nil:
		return o.st, nil
	}
	st, err := s.openOplog()
	if err != nil {
		return nil, err
	}
	o.st = st
	return st, nil
}

// OpenedOplog is the durable agents' oplog store if it was opened and is
// not closed yet, else nil: unlike Oplog it never creates the file.
func (s *System) OpenedOplog() *oplog.Store {
	o := &s.stores.oplogs
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil
	}
	return o.st
}

// closeOplog closes the oplog store, if it was opened.
func (s *System) closeOplog() error {
	o := &s.stores.oplogs
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	if o.st == nil {
		return nil
	}
	return o.st.Close()
}

// openOplog opens the store: in etcd in a cluster (the store of its
// durable agents must outlive the host, whose agents another resumes),
// else the bbolt file.
func (s *System) openOplog() (*oplog.Store, error) {
	if s.Config.Cluster != nil && s.opts.Cluster.Client != nil {
		prefix := s.Config.OplogPrefix()
		st, err := oplog.OpenEtcd(oplog.EtcdOptions{Client: s.opts.Cluster.Client, Prefix: prefix, Log: s.log, Guard: s.opts.Cluster.OplogGuard})
		if err != nil {
			return nil, err
		}
		s.log.Info("durable agents' oplog: in etcd", zap.String("oplog_prefix", prefix))
		return st, nil
	}
	path := s.Config.OplogPath()
	st, err := oplog.Open(oplog.Options{Path: path, Log: s.log})
	if err != nil {
		return nil, err
	}
	s.log.Info("durable agents' oplog: a bbolt file", zap.String("oplog_file", path))
	return st, nil
}
