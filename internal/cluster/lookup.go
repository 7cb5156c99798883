package cluster

// Lookups for the message path: who holds an agent's key, where a member's
// control API is, and when either changes (a message for an agent another
// host runs is forwarded to that host; one whose agent is moving waits).

import "time"

// Owner is the member that holds agent's ownership key, as watched, and
// whether one does. An agent this host holds but is still starting,
// handing over or fencing has no owner here (its messages wait).
func (n *Node) Owner(agent string) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if la := n.held.agents[agent]; la != nil {
		if la.releasing || la.starting || n.lease.fencing {
			return "", false
		}
		return n.o.Name, true
	}
	o, ok := n.view.owners[agent]
	if !ok || o.host == n.o.Name { // a key of this host's previous session: going
		return "", false
	}
	return o.host, true
}

// Place is the settled member agent belongs on now ("" when none is, or
// this host is not synced).
func (n *Node) Place(agent string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.view.synced || n.lease.fencing {
		return ""
	}
	return n.place.targetsFor(n.settledLocked(time.Now()))[agent]
}

// Want asks this host to claim a lazy agent (Placement.Lazy) that belongs here:
// a message for it arrived. The next pass claims it if nobody holds it.
func (n *Node) Want(agent string) {
	n.mu.Lock()
	n.place.wanted[agent] = true
	n.mu.Unlock()
	n.poke()
}

// Address is the control API URL member published, "" when it published
// none or is not a live member.
func (n *Node) Address(member string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if m := n.view.members[member]; m != nil {
		return m.info.Address
	}
	return ""
}

// Self is this member's name.
func (n *Node) Self() string { return n.o.Name }

// Changed is closed at the next change of the view (members, ownership
// keys) or of what this host holds.
func (n *Node) Changed() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.wait.changed
}

// Gone is closed once member is no longer a live member: its key was
// deleted (it left, or its lease expired) or a listing lacks it. A member
// not in the view of a synced node is gone already.
func (n *Node) Gone(member string) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ch, ok := n.wait.gone[member]; ok {
		return ch
	}
	ch := make(chan struct{})
	if n.view.synced && n.view.members[member] == nil {
		close(ch)
		return ch
	}
	n.wait.gone[member] = ch // resolved by the next listing or deletion
	return ch
}

// pollEvery bounds a wait on Changed where a change may not be watched
// (a member's control API coming up): waiters re-check this often.
const pollEvery = 250 * time.Millisecond

// Wait returns at the next change or after a short poll period, or when
// done is closed (false then).
func (n *Node) Wait(done <-chan struct{}) bool {
	t := time.NewTimer(pollEvery)
	defer t.Stop()
	select {
	case <-n.Changed():
	case <-t.C:
	case <-done:
		return false
	}
	return true
}

// Departed counts the members this node saw leave the cluster (their key
// deleted, or missing from a listing): a change of it, at a Changed, is
// a member gone, whose sessions nobody holds any more.
func (n *Node) Departed() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.view.departed
}
