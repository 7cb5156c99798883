package system

import (
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/kv"
)

// openStore opens the key-value store the agents' wasi:keyvalue imports
// reach: the configured backend, or a temporary one.
func (s *System) openStore() error {
	var (
		st  kv.Store
		err error
	)
	if s.opts.TemporaryStore {
		if s.stores.kvDir, err = os.MkdirTemp("", "toolhostd-kv-"); err != nil {
			return fmt.Errorf("key-value store: %w", err)
		}
		path := filepath.Join(s.stores.kvDir, config.StoreFile)
		s.log.Info("the key-value store is temporary: it is removed at exit", zap.String("path", path))
		st, err = kv.OpenBolt(path, kv.BoltOptions{})
	} else {
		st, err = kv.OpenConfigured(s.Config, s.opts.Cluster.Client)
	}
	if err != nil {
		return err
	}
	if !s.opts.TemporaryStore {
		s.logStore()
	}
	s.stores.kv = st
	s.KV = kv.New(st, kv.Options{Log: s.log})
	if m := s.opts.Metrics; m != nil {
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
	if s.stores.kv != nil {
		err = s.stores.kv.Close()
	}
	if s.stores.kvDir != "" {
		if rerr := os.RemoveAll(s.stores.kvDir); err == nil {
			err = rerr
		}
	}
	return err
}
