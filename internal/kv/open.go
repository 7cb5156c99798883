package kv

import (
	"fmt"
	"os"
	"path/filepath"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/toolhostd/toolhostd/internal/config"
)

// OpenConfigured opens the backend c's [host] store names: bbolt at
// c.StorePath() (its directory made if missing), or etcd on cli (the
// cluster's client, which the caller keeps) under c.StorePrefix().
func OpenConfigured(c *config.Config, cli *clientv3.Client) (Store, error) {
	switch c.Host.Store.Backend {
	case config.StoreEtcd:
		if cli == nil {
			return nil, fmt.Errorf("key-value store: backend etcd needs the cluster's etcd client")
		}
		return NewEtcd(cli, EtcdOptions{Prefix: c.StorePrefix()}), nil
	case config.StoreBbolt, "":
		path := c.StorePath()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("key-value store: %w", err)
		}
		return OpenBolt(path, BoltOptions{})
	}
	return nil, fmt.Errorf("key-value store: unknown backend %q", c.Host.Store.Backend)
}
