package cluster

// The parts of a Node's state. Those other than pacer are guarded by
// Node.mu: a critical section may span several of them (a claim checks
// the lease and records the key it holds), so they share it.

import (
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/time/rate"
)

// pacer drives the reconcile loop: wake asks it for a pass soon, moves
// paces the hand overs its passes start. Neither needs Node.mu.
type pacer struct {
	wake  chan struct{} // buffered 1: a pass is wanted
	moves *rate.Limiter // Options.MovesPerSecond
}

// poke asks for a pass, without waiting.
func (p pacer) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// leaseState is this member's current session: its lease and what the
// session came to (fencing, a pass made settled).
type leaseState struct {
	id      clientv3.LeaseID // the current session's; 0 between sessions
	lastOK  time.Time        // when the last answered renewal (or the grant) was sent
	fencing bool
	passed  bool // a reconcile pass ran with this member settled
}

// view is the cluster's keys as this host listed and watched them: the
// live members and the holders of the agents' and sessions' keys.
type view struct {
	synced     bool  // listed in this session
	rev        int64 // the etcd revision the view is at
	members    map[string]*member
	owners     map[string]owner    // agent -> holder
	sessOwners map[sessionID]owner // session -> holder
	departed   uint64              // members seen to leave (lookup.go: Departed)
}

// reset empties the view's keys (a new session, or a listing, fills it).
func (v *view) reset() {
	v.synced = false
	v.members, v.owners = map[string]*member{}, map[string]owner{}
	v.sessOwners = map[sessionID]owner{}
}

// placing is what this host places, Options.Placement as last read and
// the agents a message asked for, and the placement computed from it.
type placing struct {
	agents map[string]bool // configured
	// lazy are the configured agents claimed only once a message wants
	// them (start = "on-message"); wanted those a message asked for here.
	lazy, wanted map[string]bool
	digest       string // the config's, published in the member key
	// targets caches each agent's placement over the settled members
	// named by targetsKey (nil: to compute).
	targets    map[string]string
	targetsKey string
}

// read takes in p (wanted stays: those messages still want their agent).
func (pl *placing) read(p Placement) {
	pl.agents = make(map[string]bool, len(p.Agents))
	for _, a := range p.Agents {
		pl.agents[a] = true
	}
	pl.lazy = make(map[string]bool, len(p.Lazy))
	for _, a := range p.Lazy {
		pl.lazy[a] = true
	}
	pl.digest = p.Digest
	pl.targets = nil
}

// targetsFor maps each configured agent to the member it belongs on
// among settled, recomputed only when settled or the agents change.
func (pl *placing) targetsFor(settled []string) map[string]string {
	key := strings.Join(settled, "\x00")
	if pl.targets != nil && key == pl.targetsKey {
		return pl.targets
	}
	pl.targets = make(map[string]string, len(pl.agents))
	for a := range pl.agents {
		pl.targets[a] = Place(a, settled)
	}
	pl.targetsKey = key
	return pl.targets
}

// holdings are the keys this host holds in the current session, and the
// locks that serialise each session's claims and releases.
type holdings struct {
	agents map[string]*localAgent
	// sessions counts this host's instances under each session key it
	// holds (sessions.go).
	sessions map[sessionID]int
	locks    map[sessionID]*sessionLock
}

// waiters are the channels the message path waits on (lookup.go).
type waiters struct {
	// changed is closed and replaced whenever the view or this host's
	// holdings change.
	changed chan struct{}
	gone    map[string]chan struct{} // member -> closed when it goes
}

// notify wakes the waiters of Changed.
func (w *waiters) notify() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// goneMember closes member's Gone channel.
func (w *waiters) goneMember(member string) {
	if ch, ok := w.gone[member]; ok {
		close(ch)
		delete(w.gone, member)
	}
}

// stats are the node's counters.
type stats struct {
	counts   Counts
	requests int64 // etcd requests made (reads, writes, renewals)
}
