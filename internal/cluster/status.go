package cluster

import (
	"maps"
	"slices"
	"time"
)

// Status is the node's view of the cluster.
type Status struct {
	Name      string    // this member
	Joined    bool      // holds a lease and its member key
	Fencing   bool      // stopping (or stopped) its agents for a lost lease
	Lease     int64     // the lease ID, 0 between sessions
	LastRenew time.Time // when the last answered renewal was sent
	Digest    string    // this member's config digest
	Members   []MemberStatus
	// Owners maps each agent with an ownership key to its holder.
	Owners map[string]string
	Owned  []string // the agents this host holds, sorted
	Counts Counts
	// Requests counts the etcd requests this node made.
	Requests int64
}

// MemberStatus is one live member as its key says.
type MemberStatus struct {
	Name    string
	Digest  string
	Settled bool              // counts for placement
	Agents  map[string]string // its agents by state, as it last published them
	Address string            // its control API, as published
	// Sessions are its per-session instances, agent -> session -> state.
	Sessions map[string]map[string]string
}

// Status reports the node's view.
func (n *Node) Status() Status {
	now := time.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	st := Status{
		Name: n.o.Name, Joined: n.lease.id != 0 && n.view.synced, Fencing: n.lease.fencing,
		Lease: int64(n.lease.id), LastRenew: n.lease.lastOK, Digest: n.place.digest,
		Owners: make(map[string]string, len(n.view.owners)), Counts: n.stats.counts, Requests: n.stats.requests,
	}
	for a, o := range n.view.owners {
		st.Owners[a] = o.host
	}
	for _, name := range slices.Sorted(maps.Keys(n.view.members)) {
		m := n.view.members[name]
		st.Members = append(st.Members, MemberStatus{
			Name: name, Digest: m.info.Digest, Settled: now.Sub(m.since) >= n.o.Settle,
			Agents: maps.Clone(m.info.Agents), Address: m.info.Address, Sessions: m.info.Sessions,
		})
	}
	for a, la := range n.held.agents {
		if !la.stopped {
			st.Owned = append(st.Owned, a)
		}
	}
	slices.Sort(st.Owned)
	return st
}

// Ready reports whether this host has joined, counts for placement, ran a
// pass since, and every agent it holds was started.
func (n *Node) Ready() bool {
	n.mu.Lock()
	if n.lease.id == 0 || !n.view.synced || !n.lease.passed || n.lease.fencing {
		n.mu.Unlock()
		return false
	}
	var held []string
	for a, la := range n.held.agents {
		if !la.releasing {
			held = append(held, a)
		}
	}
	n.mu.Unlock()
	for _, a := range held {
		if !n.o.Runner.Started(a) {
			return false
		}
	}
	return true
}
