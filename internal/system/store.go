package system

import (
	"fmt"
	"os"
	"path/filepath"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/kv"
)

// WithStoreClient is the cluster's etcd client, on which the key-value
// store's etcd backend ([host] store = { backend = "etcd" }, the default
// with [cluster]) keeps its keys. The caller closes it after Close.
func WithStoreClient(cli *clientv3.Client) Option { return func(o *options) { o.etcd = cli } }

// WithTemporaryStore keeps the key-value store in a bbolt file of a new
// temporary directory that Close removes, instead of the configured
// backend: for `toolhostd run` without a state directory of its own.
func WithTemporaryStore() Option { return func(o *options) { o.tempStore = true } }

// openStore opens the key-value store the agents' wasi:keyvalue imports
// reach: the configured backend, or a temporary one.
func (s *System) openStore() error {
	var (
		st  kv.Store
		err error
	)
	if s.opts.tempStore {
		if s.storeDir, err = os.MkdirTemp("", "toolhostd-kv-"); err != nil {
			return fmt.Errorf("key-value store: %w", err)
		}
		path := filepath.Join(s.storeDir, config.StoreFile)
		s.log.Info("the key-value store is temporary: it is removed at exit", zap.String("path", path))
		st, err = kv.OpenBolt(path, kv.BoltOptions{})
	} else {
		st, err = kv.OpenConfigured(s.Config, s.opts.etcd)
	}
	if err != nil {
		return err
	}
	if !s.opts.tempStore {
		s.logStore()
	}
	s.store = st
	s.KV = kv.New(st, kv.Options{Log: s.log})
	if m := s.opts.metrics; m != nil {
		m.KV(s.KV)
	}
	return nil
}

// logStore says where the configured key-value store keeps its keys.
func (s *System) logStore() {
	if s.Config.Host.Store.Backend == config.StoreEtcd {
		s.log.Info("key-value store: the cluster's etcd", zap.String("kv_prefix", s.Config.StorePrefix()))
		return
	}
	s.log.Info("key-value store: a bbolt file", zap.String("kv_file", s.Config.StorePath()))
}

// closeStore closes the key-value store (and removes a temporary one).
func (s *System) closeStore() error {
	var err error
	if s.store != nil {
		err = s.store.Close()
	}
	if s.storeDir != "" {
		if rerr := os.RemoveAll(s.storeDir); err == nil {
			err = rerr
		}
	}
	return err
}
