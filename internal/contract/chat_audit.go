package contract

import (
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolhostd/toolhostd/internal/audit"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// chatEnd is what the audit line and the metrics of one finished (or
// refused) model request need.
type chatEnd struct {
	op    string
	id    string // chat-stream only
	req   provider.Request
	raw   []byte // ph.auditJSON(req)
	start time.Time
	first time.Time // the first delta; zero: none
	resp  provider.Response
	err   *tooling.Error
	// span is the request's chat span (nil: none, or refused before it
	// was made); deltas counts a stream's deltas for it.
	span   trace.Span
	deltas int
	// reissued: made again by a durable instance's replay.
	reissued bool
}

// audit writes the request's audit line and reports it to the chat
// observer.
func (ph *ProviderHandle) audit(e chatEnd) {
	a := ph.a
	model := e.resp.Model
	if model == "" {
		model = e.req.Model
	}
	oc, msg := audit.OutcomeOK, ""
	if e.err != nil {
		oc, msg = e.err.Code.String(), e.err.Message
	}
	d := time.Since(e.start)
	var ft time.Duration
	if !e.first.IsZero() {
		ft = e.first.Sub(e.start)
	}
	usage := e.err == nil
	tid, sid := spanIDs(e.span)
	if a.rec.audit != nil {
		a.rec.audit.Write(audit.Record{
			Agent: a.name, Op: e.op, Outcome: oc, Message: msg, Duration: d, WithArgs: ph.auditMessages(),
			ModelRequest: audit.ModelRequest{
				Provider: ph.name, StreamID: e.id, Model: model,
				FirstToken: ft, HasFirstToken: !e.first.IsZero(),
				InputTokens: e.resp.Usage.InputTokens, OutputTokens: e.resp.Usage.OutputTokens, HasUsage: usage,
				Request: e.raw, HasRequest: true, Reissued: e.reissued,
			},
			Trace: audit.Trace{TraceID: tid, SpanID: sid},
		})
	}
	ph.endChat(e.span, e, e.deltas)
	if a.prov.observe != nil {
		a.prov.observe(ChatRecord{Agent: a.name, Provider: ph.name, Model: model, Op: e.op, Outcome: oc,
			Duration: d, FirstToken: ft, HasFirstToken: !e.first.IsZero(), Usage: e.resp.Usage})
	}
}

// auditJSON is req as its audit line records it (provider.AuditJSON), nil
// without an audit log: a chat does not marshal its whole conversation for
// nobody.
func (ph *ProviderHandle) auditJSON(req provider.Request) []byte {
	if ph.a.rec.audit == nil {
		return nil
	}
	return provider.AuditJSON(req)
}

func (ph *ProviderHandle) auditMessages() bool {
	f := ph.a.prov.access.AuditMessages
	return f != nil && f(ph.name)
}
