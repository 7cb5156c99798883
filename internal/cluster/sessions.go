package cluster

// Per-session instances: an agent with instances = "per-session" runs on
// every host, and each of its sessions' instance on one: the holder of the
// session's key PREFIX/sessions/AGENT/SESSION (the session path-escaped),
// created only if absent, attached to the holder's lease, deleted once
// the instance ended. A session with no holder belongs on the settled
// member with the highest rendezvous weight for (agent, session); only
// that member claims it, when a message for it arrives.

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// sessionID names one session of one agent.
type sessionID struct{ agent, session string }

func (n *Node) sessionKey(id sessionID) string {
	return n.o.Prefix + "/sessions/" + id.agent + "/" + url.PathEscape(id.session)
}

// parseSession is the sessionID of NAME in PREFIX/sessions/NAME.
func parseSession(name string) (sessionID, bool) {
	agent, esc, ok := strings.Cut(name, "/")
	if !ok {
		return sessionID{}, false
	}
	s, err := url.PathUnescape(esc)
	if err != nil {
		return sessionID{}, false
	}
	return sessionID{agent, s}, true
}

// SessionOwner is the member holding the key of agent's session, and
// whether one does.
func (n *Node) SessionOwner(agent, session string) (string, bool) {
	id := sessionID{agent, session}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.held.sessions[id]; ok && !n.lease.fencing {
		return n.o.Name, true
	}
	o, ok := n.view.sessOwners[id]
	if !ok || o.host == n.o.Name {
		return "", false
	}
	return o.host, true
}

// PlaceSession is the settled member agent's session belongs on while
// nobody holds it, "" when no member is settled (or this one is not
// synced).
func (n *Node) PlaceSession(agent, session string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.view.synced || n.lease.fencing {
		return ""
	}
	return Place(agent+"\x00"+session, n.settledLocked(time.Now()))
}

// ClaimSession makes this host the holder of agent's session's key (nil
// when it is already). ErrSessionHeld: another member holds it, or this
// host is not joined. The caller starts an instance of the session only
// after a nil answer and calls ReleaseSession once that instance ended.
// A session's claims and releases on this host are serialised
// (lockSession): a release never deletes the key under an instance that a
// claim just counted. Other sessions' go on meanwhile.
func (n *Node) ClaimSession(ctx context.Context, agent, session string) error {
	id := sessionID{agent, session}
	defer n.lockSession(id)()
	n.mu.Lock()
	lease, fencing := n.lease.id, n.lease.fencing
	if _, mine := n.held.sessions[id]; mine && !fencing && lease != 0 {
		n.held.sessions[id]++ // one more instance under the key (one ending, one new)
		n.mu.Unlock()
		return nil
	}
	n.mu.Unlock()
	if lease == 0 || fencing {
		return fmt.Errorf("%w: this host is not joined", ErrSessionHeld)
	}
	resp, err := n.createKey(ctx, n.sessionKey(id), lease)
	if err != nil {
		return fmt.Errorf("claim session %q of %s: %w", session, agent, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: session %q of %s", ErrSessionHeld, session, agent)
	}
	// As claim: a fence that began meanwhile must see this start (the
	// caller records the instance where Halt finds it, or is refused).
	n.startMu.Lock()
	defer n.startMu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.lease.fencing || n.lease.id != lease {
		return fmt.Errorf("%w: fencing", ErrSessionHeld)
	}
	n.held.sessions[id] = 1
	n.stats.counts.Claims++
	n.wait.notify()
	return nil
}

// ReleaseSession is the end of an instance ClaimSession let start: the
// last one under the key deletes it (if this host's lease still holds
// it).
func (n *Node) ReleaseSession(agent, session string) {
	id := sessionID{agent, session}
	defer n.lockSession(id)()
	n.mu.Lock()
	users, mine := n.held.sessions[id]
	lease := n.lease.id
	if mine && users > 1 {
		n.held.sessions[id]--
	}
	n.mu.Unlock()
	if !mine || users > 1 || lease == 0 {
		return
	}
	if err := n.deleteOnLease(context.Background(), n.sessionKey(id), lease); err != nil {
		// Left on the lease (it goes with it): the next instance of the
		// session here reuses it.
		n.log.Debug("drop a session key", zap.String("agent", agent), zap.String("session", session), zap.Error(err))
		return
	}
	n.mu.Lock()
	delete(n.held.sessions, id)
	n.wait.notify()
	n.mu.Unlock()
}

// sessionLock serialises one session's claims and releases; refs counts
// those holding or waiting for it (it goes from holdings.locks at zero).
type sessionLock struct {
	mu   sync.Mutex
	refs int
}

// lockSession takes id's lock and returns its unlock: a claim or release
// waits for another of the same session (each may take an etcd round
// trip), never for another session's.
func (n *Node) lockSession(id sessionID) (unlock func()) {
	n.mu.Lock()
	l := n.held.locks[id]
	if l == nil {
		l = &sessionLock{}
		n.held.locks[id] = l
	}
	l.refs++
	n.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		n.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(n.held.locks, id)
		}
		n.mu.Unlock()
	}
}
