package contract

import (
	"strings"
	"time"

	"github.com/toolhostd/toolhostd/internal/audit"
	"github.com/toolhostd/toolhostd/internal/policy"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// deniedGet audits and counts a tooling.get the agent's toolings list
// denied (op "get").
func (a *Agent) deniedGet(name string, err *tooling.Error) {
	a.acc.pol.Denied(name, audit.OpGet)
	a.rec.audit.Write(audit.Record{Agent: a.name, Tooling: name, Op: audit.OpGet, Outcome: err.Code.String(), Message: err.Message})
}

// audited reports whether the agent has an audit log.
func (h *Handle) audited() bool { return h.a.rec.audit != nil }

// record writes one audit line for an operation through h.
func (h *Handle) record(r audit.Record) {
	r.Agent, r.Tooling = h.a.name, h.s.Name()
	h.a.rec.audit.Write(r)
}

// outcome is the audit outcome of err.
func outcome(err error) (string, string) {
	if err == nil {
		return audit.OutcomeOK, ""
	}
	e := tooling.AsError(err)
	return e.Code.String(), e.Message
}

// recordURI audits a resource operation.
func (h *Handle) recordURI(op, uri, subID string, start time.Time, err error) {
	if !h.audited() {
		return
	}
	oc, msg := outcome(err)
	h.record(audit.Record{Op: op, Call: audit.Call{URI: uri, SubID: subID}, Outcome: oc, Message: msg, Duration: time.Since(start)})
}

// admit checks a call of tool against the policy (denied, then busy over a
// limit). On nil the call holds a slot of the limits until release.
func (h *Handle) admit(op, tool, args string) error {
	if err := h.pol.Tool(op, tool); err != nil {
		h.recordRefused(op, tool, args, err)
		return err
	}
	if err := h.pol.Acquire(); err != nil {
		h.recordRefused(op, tool, args, err)
		return err
	}
	return nil
}

// recordRefused audits a call refused before it was made.
func (h *Handle) recordRefused(op, tool, args string, err error) {
	h.refusedTool(tool, err)
	if !h.audited() {
		return
	}
	oc, msg := outcome(err)
	h.record(audit.Record{Op: op, Call: audit.Call{Tool: tool, Args: args, HasArgs: true}, Outcome: oc, Message: msg,
		WithArgs: h.pol.Grant().AuditArguments()})
}

// release gives the call's slot of the policy limits back, once.
func (c *call) release() {
	if c.released.CompareAndSwap(false, true) {
		c.h.pol.Release()
	}
}

// audit writes the call's line once it is finished.
func (c *call) audit(res tooling.ToolResult, herr *tooling.Error) {
	h := c.h
	if !h.audited() {
		return
	}
	r := audit.Record{Op: c.op(), Call: audit.Call{Tool: c.gc.Tool, CallID: c.gc.ID, Args: c.gc.Args, HasArgs: true},
		Duration: time.Since(c.gc.Start()), WithArgs: h.pol.Grant().AuditArguments()}
	r.TraceID, r.SpanID = spanIDs(c.span)
	switch {
	case herr != nil:
		r.Outcome, r.Message = herr.Code.String(), herr.Message
	case isToolError(res.Value):
		r.Outcome = audit.OutcomeToolError
	default:
		r.Outcome = audit.OutcomeOK
	}
	h.record(r)
}

func (c *call) op() string {
	if c.gc.Blocking {
		return audit.OpCallToolBlocking
	}
	return audit.OpCallTool
}

// isToolError reports whether a CallToolResult's JSON text has isError
// set.
func isToolError(v string) bool {
	i := strings.Index(v, `"isError"`)
	if i < 0 {
		return false
	}
	rest := strings.TrimLeft(v[i+len(`"isError"`):], " \t\r\n:")
	return strings.HasPrefix(rest, "true")
}

// allowedTools is ts without the tools the policy hides.
func allowedTools(g *policy.Grant, ts []tooling.Tool) []tooling.Tool {
	if g == nil {
		return ts
	}
	out := make([]tooling.Tool, 0, len(ts))
	for _, t := range ts {
		if g.AllowTool(t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// allowedResources is rs without the resources the policy hides.
func allowedResources(g *policy.Grant, rs []tooling.ResourceInfo) []tooling.ResourceInfo {
	if g == nil {
		return rs
	}
	out := make([]tooling.ResourceInfo, 0, len(rs))
	for _, r := range rs {
		if g.AllowURI(r.URI) {
			out = append(out, r)
		}
	}
	return out
}
