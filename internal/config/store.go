package config

// The key-value store's keys: [agent.<name>] stores and store (what the
// agent may open and keep), [host] store (the backend). See
// docs/keyvalue.md and internal/kv.

import (
	"path/filepath"
	"strings"
)

// Store backends.
const (
	StoreBbolt = "bbolt" // a file in the state directory (one host's default)
	StoreEtcd  = "etcd"  // the cluster's etcd (the default with [cluster])
	// StoreFile is the bbolt file's name in the state directory.
	StoreFile = "kv.db"
)

// AgentStore is an agent's key-value keys.
type AgentStore struct {
	// Stores are globs of the bucket identifiers the agent may open
	// ("session": a per-session instance's own bucket); default ["*"].
	Stores []string `toml:"stores"`
	// Store bounds what the agent keeps.
	Store StoreQuota `toml:"store"`
}

// StoreQuota is [agent.X] store; zero: unbounded.
type StoreQuota struct {
	MaxKeys  int      `toml:"max_keys"`
	MaxBytes ByteSize `toml:"max_bytes"` // keys' and values' bytes
}

// HostStore is [host] store.
type HostStore struct {
	// Backend is "bbolt" or "etcd" (default: etcd with [cluster], else
	// bbolt).
	Backend string `toml:"backend"`
}

// agentStoreHandlers decode an agent's key-value keys into s.
func (d *decoder) agentStoreHandlers(s *AgentStore) handlers {
	return handlers{
		"stores": func(p []string, v any) {
			s.Stores, _ = d.asStrings(p, v, func(p []string, id string) bool {
				if msg := checkPattern(id); msg != "" {
					d.errAt(p, "%s", msg)
					return false
				}
				if strings.Contains(id, "/") {
					d.errAt(p, "%q: a bucket identifier has no '/'", id)
					return false
				}
				return true
			})
			if s.Stores == nil {
				s.Stores = []string{}
			}
		},
		"store": func(p []string, v any) {
			m, ok := d.asTable(p, v)
			if !ok {
				return
			}
			d.fields(p, m, handlers{
				"max_keys":  func(p []string, v any) { s.Store.MaxKeys, _ = d.asInt(p, v, 0) },
				"max_bytes": func(p []string, v any) { s.Store.MaxBytes, _ = d.asByteSize(p, v) },
			})
		},
	}
}

// hostStore decodes [host] store.
func (d *decoder) hostStore(p []string, v any, s *HostStore) {
	m, ok := d.asTable(p, v)
	if !ok {
		return
	}
	d.fields(p, m, handlers{
		"backend": func(p []string, v any) { s.Backend, _ = d.asEnum(p, v, StoreBbolt, StoreEtcd) },
	})
}

// checkStore sets the defaults (stores ["*"], the backend) and refuses
// etcd without [cluster].
func (d *decoder) checkStore(c *Config) {
	for _, a := range c.Agent {
		if a.Stores == nil {
			a.Stores = []string{"*"}
		}
	}
	switch {
	case c.Host.Store.Backend == StoreEtcd && c.Cluster == nil:
		d.errAt([]string{"host", "store", "backend"}, `"etcd" needs [cluster] etcd endpoints; one host keeps its store in "bbolt"`)
	case c.Host.Store.Backend == "" && c.Cluster != nil:
		c.Host.Store.Backend = StoreEtcd
	case c.Host.Store.Backend == "":
		c.Host.Store.Backend = StoreBbolt
	}
}

// StorePath is the bbolt backend's file: kv.db in the state directory.
func (c *Config) StorePath() string { return filepath.Join(c.StateDir(), StoreFile) }

// StorePrefix is the etcd backend's key prefix: "kv" under the cluster's
// prefix.
func (c *Config) StorePrefix() string { return c.clusterPrefix() + "/kv" }

// clusterPrefix is [cluster] prefix (DefaultClusterPrefix when unset)
// without a trailing slash.
func (c *Config) clusterPrefix() string {
	p := DefaultClusterPrefix
	if c.Cluster != nil && c.Cluster.Prefix != "" {
		p = c.Cluster.Prefix
	}
	return strings.TrimSuffix(p, "/")
}
