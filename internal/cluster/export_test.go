package cluster

// LockSession takes a session's claim-and-release lock, as a claim or
// release in an etcd round trip holds it; call the result to unlock.
func (n *Node) LockSession(agent, session string) func() {
	return n.lockSession(sessionID{agent, session})
}

// SessionLocks counts the session locks held or waited for.
func (n *Node) SessionLocks() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.held.locks)
}
