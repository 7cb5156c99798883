package message

import (
	"context"
	"time"

	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Ledger keeps the idempotency keys where every host of a cluster sees
// them (internal/idem keeps them in etcd). With one, Send claims a
// message's key before it delivers the message, releases the claim when
// the message is refused, and records its outcome when it ends; a retry
// with that key, on any host, finds the claim instead of delivering again.
type Ledger interface {
	// Claim claims (agent, key) for the message id, on this host. Either
	// the claim is this message's, or prior is the message that holds the
	// key. An error (the ledger did not answer in time) refuses the
	// message: none is delivered without its key recorded. durable: the
	// agent is durable, so a prior message whose host stopped is resumed
	// by its next host (Resume) rather than lost: its record is left in
	// flight (prior.Stopped) instead of being settled with the
	// unknown-outcome error.
	Claim(ctx context.Context, agent, key, id string, durable bool) (c Claim, prior *Prior, err error)
	// Resume claims again, on this host, the key of message id, which a
	// durable agent resumes here after the host that claimed it stopped
	// (Router.Resume), so that a retry finds the message here and its
	// outcome is recorded when it ends. A key held elsewhere, or whose
	// message ended with its outcome, is left: c is nil.
	Resume(ctx context.Context, agent, key, id string) (c Claim, err error)
	// Flush waits until every outcome and release this host made so far
	// is recorded, or ctx ends (before this host lets another take its
	// agents).
	Flush(ctx context.Context) error
}

// Claim is a key a message holds.
type Claim interface {
	// Release gives the key up: the message was not delivered.
	Release()
	// End records the message's terminal event, in the background.
	End(ev Event)
}

// Prior is the message that holds a key.
type Prior struct {
	// ID is the message's id, Host the host that delivered it.
	ID, Host string
	// Ended: the message ended, with the terminal event Outcome, which a
	// retry is answered with. Else it is in flight on Host.
	Ended   bool
	Outcome Event
	// Stopped: in flight on Host, which stopped (a durable agent's: its
	// next host resumes it).
	Stopped bool
}

// prior answers a retry whose key the ledger holds for another message:
// that message when this host still keeps it, else its recorded outcome
// replayed as a message of that id (kept like the others), else (in
// flight on another host) a refusal naming that host.
func (r *Router) prior(req Request, start time.Time, p *Prior) (*Message, bool, error) {
	if m, ok := r.t.get(req.Agent, p.ID); ok {
		return m, true, nil
	}
	switch {
	case !p.Ended && p.Stopped:
		return nil, false, r.refused(req, start, refuse(ErrUnavailable, tooling.CodeUnavailable,
			"message %s with this idempotency key was on host %q, which stopped; the durable agent's next host resumes it: retry later", p.ID, p.Host))
	case !p.Ended:
		return nil, false, r.refused(req, start, refuse(ErrUnavailable, tooling.CodeUnavailable,
			"message %s with this idempotency key is in flight on host %q: retry later", p.ID, p.Host))
	}
	m := newMessage(p.ID, req, r.opts.MaxReplyBytes, r.opts.Now)
	if err := r.t.add(m); err != nil {
		return nil, false, r.refused(req, start, err)
	}
	m.replay(p.Outcome)
	return m, true, nil
}

// Settle waits until the ledger recorded every message that ended here
// so far (no ledger: at once), or ctx ends.
func (r *Router) Settle(ctx context.Context) error {
	if r.opts.Ledger == nil {
		return nil
	}
	return r.opts.Ledger.Flush(ctx)
}
