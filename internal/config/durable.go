package config

// The durable-agent keys: [agent.<name>] durable and max_oplog. See
// docs/durable.md and internal/oplog.

import "path/filepath"

// Durable-agent defaults and the oplog's file.
const (
	// OplogFile is the durable agents' oplog file in the state directory.
	OplogFile = "oplog.db"
	// DefaultMaxOplogEntries and DefaultMaxOplogBytes bound one instance's
	// oplog when max_oplog leaves them out.
	DefaultMaxOplogEntries = 100_000
	DefaultMaxOplogBytes   = ByteSize(64 << 20)
)

// AgentDurable is an agent's durable keys.
type AgentDurable struct {
	// Durable records every host call's result of each instance in the
	// host's oplog, so that a crashed or restarted instance is replayed
	// into a fresh one instead of starting over.
	Durable bool `toml:"durable"`
	// MaxOplog bounds one instance's oplog: past it the instance is
	// stopped cleanly (its oplog ends) and the next message starts a new one.
	MaxOplog OplogLimit `toml:"max_oplog"`
}

// OplogLimit is [agent.X] max_oplog.
type OplogLimit struct {
	// Entries and Bytes: 0 is the default (DefaultMaxOplog*).
	Entries int      `toml:"entries"`
	Bytes   ByteSize `toml:"bytes"`
}

// agentDurableHandlers decode an agent's durable keys into a.
func (d *decoder) agentDurableHandlers(a *AgentDurable) handlers {
	return handlers{
		"durable": func(p []string, v any) { a.Durable, _ = d.asBool(p, v) },
		"max_oplog": func(p []string, v any) {
			m, ok := d.asTable(p, v)
			if !ok {
				return
			}
			d.fields(p, m, handlers{
				"entries": func(p []string, v any) { a.MaxOplog.Entries, _ = d.asInt(p, v, 0) },
				"bytes":   func(p []string, v any) { a.MaxOplog.Bytes, _ = d.asByteSize(p, v) },
			})
		},
	}
}

// checkDurable sets a durable agent's max_oplog defaults (0: the default).
func (d *decoder) checkDurable(a *AgentDurable) {
	if !a.Durable {
		return
	}
	if a.MaxOplog.Entries == 0 {
		a.MaxOplog.Entries = DefaultMaxOplogEntries
	}
	if a.MaxOplog.Bytes == 0 {
		a.MaxOplog.Bytes = DefaultMaxOplogBytes
	}
}

// Durable reports whether some agent is durable.
func (c *Config) Durable() bool {
	for _, a := range c.Agent {
		if a.Durable {
			return true
		}
	}
	return false
}

// OplogPath is the durable agents' oplog: oplog.db in the state directory.
func (c *Config) OplogPath() string { return filepath.Join(c.StateDir(), OplogFile) }

// OplogPrefix is where a cluster keeps the durable agents' oplogs in
// etcd: the cluster's prefix with "-oplog" appended, beside it rather
// than under it, because every member lists and watches all that is under
// the cluster's prefix and an oplog there would send each append to every
// member.
func (c *Config) OplogPrefix() string { return c.clusterPrefix() + "-oplog" }
