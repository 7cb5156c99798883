package cluster

// Writes fenced by ownership: state an agent's instance keeps in etcd (a
// durable agent's oplog) is written only while this host holds the
// agent's key, so that a host cut off from the cluster, whose agent
// another host has claimed and resumed meanwhile, cannot write under it.

import (
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// WriteGuard is the comparison under which this host may write the state
// of an instance of agent (of its session after a '/', as an oplog key
// names it): the agent's (session's) key is on this host's current lease.
// Between sessions, and once fencing, it is a comparison that always
// fails. It does not block: it is meant for oplog.EtcdOptions.Guard.
func (n *Node) WriteGuard(agent string) []clientv3.Cmp {
	key := n.agentKey(agent)
	if a, s, ok := strings.Cut(agent, "/"); ok {
		key = n.sessionKey(sessionID{a, s})
	}
	n.mu.Lock()
	lease, fencing := n.lease.id, n.lease.fencing
	n.mu.Unlock()
	if lease == 0 || fencing {
		return []clientv3.Cmp{clientv3.Compare(clientv3.Version(key), "<", 0)} // never true
	}
	// A missing key compares as lease 0: it fails too.
	return []clientv3.Cmp{clientv3.Compare(clientv3.LeaseValue(key), "=", lease)}
}
