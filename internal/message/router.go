package message

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/audit"
	"github.com/toolhostd/toolhostd/internal/policy"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tracing"
)

// Size defaults.
const (
	// DefaultMaxMessageBytes bounds a message's content when the agent
	// sets no max_message_bytes.
	DefaultMaxMessageBytes = 1 << 20
	// DefaultMaxReplyBytes bounds a reply's text.
	DefaultMaxReplyBytes = 16 << 20
)

// Request is a message to send.
type Request struct {
	// ID is the message's id; "" makes a new UUID.
	ID string
	// Agent is the agent it is for.
	Agent string
	// Session names the conversation; "" for a one-off.
	Session string
	// Sender is "api", "mcp", "a2a" or "agent:NAME".
	Sender string
	// Content is the message's text.
	Content string
	// IdempotencyKey, when set, makes a retry with the same key (for the
	// same agent) return the message it first accepted, while that is
	// retained, instead of delivering again (with a Ledger, on any host of
	// the cluster).
	IdempotencyKey string
	// Claimed says the host that forwarded the message (a cluster host
	// that does not run its agent) already claimed IdempotencyKey in the
	// Ledger: this router keeps the key in its own table only.
	Claimed bool
	// Audit writes the content into the audit log (the sending agent's
	// audit_arguments).
	Audit bool
}

// Target is what the router needs to know of an agent before delivering.
type Target struct {
	// Accepts are the sender globs the agent takes (its accepts).
	Accepts []string
	// MaxMessageBytes bounds a message's content (0: the default).
	MaxMessageBytes int
	// AuditContent writes messages' content into the audit log.
	AuditContent bool
	// Durable: the agent's messages outlive their host (a durable agent's
	// next host resumes them; see Ledger.Claim); SessionsOnly: only those
	// of a session do (a per-session agent in a cluster: a one-off runs
	// where it arrives, and no other host resumes it).
	Durable, SessionsOnly bool
}

// Agents is the router's view of the agents: the daemon (or a one-agent
// run) implements it.
type Agents interface {
	// Target describes the agent; ErrUnknownAgent if there is none.
	Target(agent string) (Target, error)
	// Deliver hands m to the instance that serves (m.Agent(), m.Session()),
	// starting it if need be, through that instance's Mailbox.Put. Its
	// errors are the refusals above (ErrUnsupported, ErrBusy, ...).
	Deliver(ctx context.Context, m *Message) error
}

// Record is one ended message, for metrics.
type Record struct {
	Agent, Sender, Session string
	Outcome                string // ok or an error code
	Duration               time.Duration
	FirstDelta             time.Duration
	HasFirstDelta          bool
	// Refused: the message was not accepted (Outcome is the refusal's
	// code).
	Refused bool
}

// Options configure a Router; zero values take the defaults.
type Options struct {
	Retention     time.Duration
	MaxMessages   int
	MaxBytes      int
	MaxReplyBytes int
	// Now is the clock (time.Now).
	Now func() time.Time
	// Audit, when set, gets a line per message (accepted and ended, or
	// refused).
	Audit *audit.Log
	// Observe, when set, is called once per ended message (metrics).
	Observe func(Record)
	// Log gets refusals at debug.
	Log *zap.Logger
	// Ledger, when set, keeps the idempotency keys across the hosts of a
	// cluster: it, not this host's table, decides whether a key was
	// delivered (see Ledger).
	Ledger Ledger
	// Tracer starts each message's invoke_agent span; nil: none.
	Tracer trace.TracerProvider
	// CaptureContent records the message and its reply on the span.
	CaptureContent bool
}

// Router accepts messages and keeps their replies. Its methods are safe
// for concurrent use.
type Router struct {
	agents Agents
	opts   Options
	log    *zap.Logger
	t      *table
	tracer trace.Tracer // nil: no spans (Options.Tracer unset)
}

// NewRouter is a router delivering to agents.
func NewRouter(agents Agents, opts Options) *Router {
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.MaxMessages <= 0 {
		opts.MaxMessages = DefaultMaxMessages
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxReplyBytes <= 0 {
		opts.MaxReplyBytes = DefaultMaxReplyBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	r := &Router{agents: agents, opts: opts, log: log.Named("messages"),
		t: newTable(opts.Retention, opts.MaxMessages, opts.MaxBytes, opts.Now)}
	if opts.Tracer != nil {
		r.tracer = opts.Tracer.Tracer(tracerName)
	}
	return r
}

// Send accepts req and delivers it. With an idempotency key already
// retained for the agent (with a Ledger: recorded in it) it returns that
// message, or one replaying its recorded outcome, and existing true,
// delivering nothing. Refusals are *tooling.Error values that also match
// this package's sentinels.
func (r *Router) Send(ctx context.Context, req Request) (m *Message, existing bool, err error) {
	ctx, span := r.startSpan(ctx, req)
	m, existing, err = r.send(ctx, req, span)
	switch {
	case err != nil:
		spanRefused(span, err)
	case existing:
		span.SetAttributes(tracing.AttrMessageID.String(m.id), attribute.Bool("toolhost.message.existing", true))
		span.End()
	}
	return m, existing, err
}

func (r *Router) send(ctx context.Context, req Request, span trace.Span) (m *Message, existing bool, err error) {
	start := r.opts.Now()
	tgt, err := r.agents.Target(req.Agent)
	if err != nil {
		return nil, false, r.refused(req, start, err)
	}
	if !accepts(tgt.Accepts, req.Sender) {
		return nil, false, r.refused(req, start, refuse(ErrDenied, tooling.CodeDenied,
			"agent %q does not accept messages from %q: agent.%s.accepts %s has no match", req.Agent, req.Sender, req.Agent, quote(tgt.Accepts)))
	}
	max := tgt.MaxMessageBytes
	if max <= 0 {
		max = DefaultMaxMessageBytes
	}
	if len(req.Content) > max {
		return nil, false, r.refused(req, start, refuse(ErrTooLarge, tooling.CodeInvalidArgument,
			"message of %d bytes is over agent.%s.max_message_bytes = %d", len(req.Content), req.Agent, max))
	}
	ledger := r.opts.Ledger
	if req.IdempotencyKey == "" || req.Claimed {
		ledger = nil
	}
	if req.IdempotencyKey != "" && ledger == nil {
		if m, ok := r.t.byIdempotencyKey(req.Agent, req.IdempotencyKey); ok {
			return m, true, nil
		}
	}
	id := req.ID
	if id == "" {
		id = uuid.NewString()
	}
	m = newMessage(id, req, r.opts.MaxReplyBytes, r.opts.Now)
	m.span = span
	span.SetAttributes(tracing.AttrMessageID.String(id))
	if err := r.t.add(m); err != nil {
		return nil, false, r.refused(req, start, err)
	}
	var claim Claim
	if ledger != nil {
		// The ledger, not this host's table, says whether the key was
		// delivered: the message is in the table first, so that a
		// concurrent retry here finds it by the id the ledger names.
		durable := tgt.Durable && (req.Session != "" || !tgt.SessionsOnly)
		c, prior, err := ledger.Claim(ctx, req.Agent, req.IdempotencyKey, id, durable)
		switch {
		case err != nil:
			r.t.remove(m)
			return nil, false, r.refused(req, start, refuse(ErrUnavailable, tooling.CodeUnavailable,
				"the idempotency key could not be recorded, so the message was not delivered: %v", err))
		case prior != nil:
			r.t.remove(m)
			return r.prior(req, start, prior)
		}
		claim = c
	}
	if err := r.agents.Deliver(ctx, m); err != nil {
		r.t.remove(m)
		if claim != nil {
			claim.Release()
		}
		return nil, false, r.refused(req, start, err)
	}
	m.delivered()
	if claim != nil {
		m.onFinish(func(m *Message) { claim.End(m.last()) })
	}
	auditContent := req.Audit || tgt.AuditContent
	m.onFinish(func(m *Message) { r.ended(m, auditContent); r.endSpan(m) })
	return m, false, nil
}

// Resume accepts again a message a durable agent had accepted before its
// host stopped (req.ID is its id; nothing is delivered: the caller opens
// it in the instance that takes over, Mailbox.Resume), so that its reply
// is kept here as any message's is, found by its id and by its
// idempotency key.
//
// Traced, its invoke_agent span is a child of parent, the span of the
// message as it was first accepted (remote: that host is gone), so that
// the message's trace goes on across the restart; the span says
// toolhost.message.resumed.
//
// fresh is false when the router still has the message (an instance of
// this process handed it over, or the message was forwarded from here to
// the host that died): its reply so far (ReplyBytes) is kept, and the
// caller must not make it again; its Resumed channel is closed.
func (r *Router) Resume(req Request, parent trace.SpanContext) (m *Message, fresh bool, err error) {
	if m, ok := r.t.get(req.Agent, req.ID); ok {
		m.resumeOnce.Do(func() { close(m.resumed) })
		return m, false, nil
	}
	m = newMessage(req.ID, req, r.opts.MaxReplyBytes, r.opts.Now)
	ctx := context.Background()
	if parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	// The span is the message's before the table has it: once it does,
	// others read it (a reply's events, a status's end).
	_, span := r.startSpan(ctx, req)
	span.SetAttributes(tracing.AttrMessageID.String(req.ID), attrResumed.Bool(true))
	m.span = span
	if err := r.t.add(m); err != nil {
		spanRefused(span, err)
		return nil, false, err
	}
	m.delivered()
	if r.opts.Ledger != nil && req.IdempotencyKey != "" {
		// The host that claimed the key stopped: this one claims it again,
		// so that a retry, on any host, finds the message here and then
		// its outcome. Without the claim the message still resumes; a
		// retry gets the unknown outcome the ledger settles the key with.
		c, err := r.opts.Ledger.Resume(ctx, req.Agent, req.IdempotencyKey, req.ID)
		switch {
		case err != nil:
			r.log.Warn("a resumed message's idempotency key not claimed again", zap.String("agent", req.Agent), zap.String("message_id", req.ID), zap.Error(err))
		case c != nil:
			m.onFinish(func(m *Message) { c.End(m.last()) })
		}
	}
	m.onFinish(func(m *Message) { r.ended(m, req.Audit); r.endSpan(m) })
	return m, true, nil
}

// Get is agent's message id while it is retained.
func (r *Router) Get(agent, id string) (*Message, bool) { return r.t.get(agent, id) }

// Stats counts the open and retained messages and the bytes the retained
// ones hold.
func (r *Router) Stats() (open, retained, bytes int) { return r.t.stats() }

func (r *Router) ended(m *Message, auditContent bool) {
	outcome, text := m.outcome()
	first, hasFirst, total := m.timing()
	if r.opts.Observe != nil {
		r.opts.Observe(Record{Agent: m.agent, Sender: m.sender, Session: m.session, Outcome: outcome,
			Duration: total, FirstDelta: first, HasFirstDelta: hasFirst})
	}
	if r.opts.Audit != nil {
		rec := audit.Record{Time: m.accepted, Agent: m.agent, Op: audit.OpMessage, Outcome: outcome, Duration: total,
			WithArgs: auditContent,
			AgentMessage: audit.AgentMessage{Sender: m.sender, MessageID: m.id, Session: m.session,
				Content: m.content, HasContent: true},
			ModelRequest: audit.ModelRequest{FirstToken: first, HasFirstToken: hasFirst}}
		rec.TraceID, rec.SpanID = tracing.AuditIDs(m.SpanContext())
		if outcome != "ok" {
			rec.Message = text
		}
		r.opts.Audit.Write(rec)
	}
}

// refused logs and audits a refusal and returns err.
func (r *Router) refused(req Request, start time.Time, err error) error {
	herr := tooling.AsError(err)
	r.log.Debug("message refused", zap.String("agent", req.Agent), zap.String("sender", req.Sender), zap.String("code", herr.Code.String()), zap.String("reason", herr.Message))
	if r.opts.Audit != nil {
		r.opts.Audit.Write(audit.Record{Time: start, Agent: req.Agent, Op: audit.OpMessage,
			Outcome: herr.Code.String(), Message: herr.Message,
			Duration: r.opts.Now().Sub(start), WithArgs: req.Audit,
			AgentMessage: audit.AgentMessage{Sender: req.Sender, Session: req.Session, Content: req.Content, HasContent: true}})
	}
	if r.opts.Observe != nil {
		r.opts.Observe(Record{Agent: req.Agent, Sender: req.Sender, Session: req.Session, Outcome: herr.Code.String(), Refused: true})
	}
	return err
}

// accepts reports whether a sender matches one of the globs.
func accepts(globs []string, sender string) bool {
	for _, g := range globs {
		if policy.Compile(g).Match(sender) {
			return true
		}
	}
	return false
}

func quote(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = `"` + s + `"`
	}
	return "[" + strings.Join(q, ", ") + "]"
}
