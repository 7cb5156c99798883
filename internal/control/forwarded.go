package control

// Messages forwarded between the hosts of a cluster: a host that receives
// a message for an agent another host runs sends it on to that host's
// control API, marked with these headers, authenticated like any request
// (the control token, which every host of the cluster shares). The owner
// takes the sender, idempotency key and audit flag from the marked request
// and never forwards it again; the receiving host's router has claimed the
// idempotency key in the cluster's ledger (package idem), so the owner's
// does not claim it again.

import (
	"context"
	"net/http"

	"github.com/toolhostd/toolhostd/internal/message"
)

// Headers of a forwarded message request.
const (
	// HeaderForwardedBy names the member that forwarded the request; its
	// presence is the mark.
	HeaderForwardedBy = "Toolhostd-Forwarded-By"
	// HeaderSender is the original sender ("api", "mcp", "a2a",
	// "agent:NAME").
	HeaderSender = "Toolhostd-Sender"
	// HeaderAudit is "true" when the sender asked for the content in the
	// audit log (an agent's audit_arguments).
	HeaderAudit = "Toolhostd-Audit"
	// HeaderMessageID is the message's id: the answer's, and on a
	// forwarded request the id the receiving host gave it (kept).
	HeaderMessageID = "Toolhostd-Message-Id"
)

type forwardedKey struct{}

// WithForwarded marks ctx as a message request forwarded by member.
func WithForwarded(ctx context.Context, member string) context.Context {
	return context.WithValue(ctx, forwardedKey{}, member)
}

// ForwardedBy is the member that forwarded the message request of ctx,
// and whether it was forwarded at all: the daemon then delivers it only
// locally (no loops).
func ForwardedBy(ctx context.Context) (string, bool) {
	m, ok := ctx.Value(forwardedKey{}).(string)
	return m, ok
}

// forwarded applies a forwarded request's headers to req and marks ctx;
// false after answering 400 for a malformed one.
func forwarded(w http.ResponseWriter, r *http.Request, req *message.Request) (context.Context, bool) {
	ctx := r.Context()
	by := r.Header.Get(HeaderForwardedBy)
	if by == "" {
		return ctx, true
	}
	sender := r.Header.Get(HeaderSender)
	if sender == "" {
		writeError(w, http.StatusBadRequest, "a forwarded message request needs "+HeaderSender)
		return nil, false
	}
	req.Sender = sender
	req.Audit = r.Header.Get(HeaderAudit) == "true"
	req.ID = r.Header.Get(HeaderMessageID)
	// The forwarding host's router claimed the idempotency key in the
	// cluster's ledger before forwarding: claiming it again here would
	// find that claim and refuse the message as in flight there.
	req.Claimed = req.IdempotencyKey != ""
	return WithForwarded(ctx, by), true
}
