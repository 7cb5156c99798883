// Package policy is least privilege for agents: what each agent may do on
// each tooling it is granted (which tools it may call and which resource
// uris it may read or subscribe to, by glob), how many calls it may have
// running at once and how fast it may make them (a limit.Limiter). The pump
// consults an agent's Agent before an operation reaches a tooling; the
// policy can be replaced while the agent runs (Update), its next
// operations see the new one.
package policy

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/limit"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Rules are one grant's narrowing, as configured.
type Rules struct {
	Tools              []string // nil: every tool
	DenyTools          []string
	Resources          []string // nil: every resource
	MaxConcurrentCalls int      // 0: no limit
	CallsPerSecond     float64  // 0: no limit
	AuditArguments     bool
}

// RulesFrom converts the config's grant.
func RulesFrom(g *config.Grant) Rules {
	if g == nil {
		return Rules{}
	}
	return Rules{
		Tools: g.Tools, DenyTools: g.DenyTools, Resources: g.Resources,
		MaxConcurrentCalls: g.MaxConcurrentCalls, CallsPerSecond: g.CallsPerSecond,
		AuditArguments: g.AuditArguments,
	}
}

// Grant is one compiled grant: an agent's policy on one tooling. It is
// immutable; Update swaps it for a new one.
type Grant struct {
	name      string // "agent.<agent>.grants.<tooling>", for messages
	tools     []Pattern
	allTools  bool
	deny      []Pattern
	resources []Pattern
	allRes    bool
	maxConc   int
	rate      float64
	auditArgs bool
}

func compileAll(ss []string) []Pattern {
	ps := make([]Pattern, len(ss))
	for i, s := range ss {
		ps[i] = Compile(s)
	}
	return ps
}

// grantName is the table of agent's grant on tooling, as messages name it.
func grantName(agent, tooling string) string {
	return fmt.Sprintf("agent.%s.grants.%s", agent, tooling)
}

func newGrant(agent, tooling string, r Rules) *Grant {
	return &Grant{
		name:      grantName(agent, tooling),
		tools:     compileAll(r.Tools),
		allTools:  r.Tools == nil,
		deny:      compileAll(r.DenyTools),
		resources: compileAll(r.Resources),
		allRes:    r.Resources == nil,
		maxConc:   r.MaxConcurrentCalls,
		rate:      r.CallsPerSecond,
		auditArgs: r.AuditArguments,
	}
}

// AllowTool reports whether the grant lets the agent call (and see) tool.
func (g *Grant) AllowTool(tool string) bool {
	if g == nil {
		return true
	}
	return (g.allTools || anyMatch(g.tools, tool)) && !anyMatch(g.deny, tool)
}

// AllowURI reports whether the grant lets the agent read, subscribe to and
// see the resource uri.
func (g *Grant) AllowURI(uri string) bool {
	return g == nil || g.allRes || anyMatch(g.resources, uri)
}

// AuditArguments reports whether the audit log may carry the argument
// values of this grant's calls.
func (g *Grant) AuditArguments() bool { return g != nil && g.auditArgs }

// whyTool says why tool is denied.
func (g *Grant) whyTool(tool string) string {
	if p := firstMatch(g.deny, tool); p != "" {
		return fmt.Sprintf("%s.deny_tools has %q", g.name, p)
	}
	return fmt.Sprintf("%s.tools [%s] has no match", g.name, quoted(g.tools))
}

func quoted(ps []Pattern) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprintf("%q", p.src)
	}
	return strings.Join(out, ", ")
}

// Recorder counts denials and refusals over a limit (the metrics).
type Recorder interface {
	PolicyDenied(agent, tooling, op string)
	AgentLimited(agent, tooling, limit string)
}

// Agent is one agent's policy on every tooling: the grants (replaceable)
// and the state of its limits (kept across Update).
type Agent struct {
	name string
	rec  Recorder
	now  func() time.Time // the limits' clock; nil: time.Now

	grants atomic.Pointer[map[string]*Grant]

	mu    sync.Mutex
	views map[string]*View
}

// Options are the optional settings of New; the zero Options count
// nothing and read time.Now.
type Options struct {
	// Recorder counts the denials and the refusals over a limit; nil:
	// none.
	Recorder Recorder
	// Clock is what the calls_per_second buckets read; nil: time.Now.
	Clock func() time.Time
}

// New makes an agent's policy from its grants by tooling (a tooling
// without a narrowing needs no entry: it is allowed everything).
func New(agent string, grants map[string]Rules, o Options) *Agent {
	a := &Agent{name: agent, rec: o.Recorder, now: o.Clock, views: make(map[string]*View)}
	a.Update(grants)
	return a
}

// FromConfig makes an agent's policy from its [agent.<name>.grants.*]
// tables.
func FromConfig(c *config.Agent, rec Recorder) *Agent {
	return New(c.Name, RulesOf(c), Options{Recorder: rec})
}

// RulesOf is the rules of an agent's config, by tooling.
func RulesOf(c *config.Agent) map[string]Rules {
	out := make(map[string]Rules, len(c.Grants))
	for t, g := range c.Grants {
		out[t] = RulesFrom(g)
	}
	return out
}

// Update replaces every grant; operations from now on see the new ones,
// calls already admitted run on. The limits' state (running calls, the
// bucket's tokens) carries over under the new numbers.
func (a *Agent) Update(grants map[string]Rules) {
	m := make(map[string]*Grant, len(grants))
	for t, r := range grants {
		m[t] = newGrant(a.name, t, r)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.grants.Store(&m)
	for t, v := range a.views {
		v.apply(m[t])
	}
}

// Name is the agent's name.
func (a *Agent) Name() string { return a.name }

// Denied counts a denial made outside the grants (a tooling.get of a
// tooling not in the agent's toolings); a nil *Agent counts nothing.
func (a *Agent) Denied(tooling, op string) {
	if a != nil && a.rec != nil {
		a.rec.PolicyDenied(a.name, tooling, op)
	}
}

// View is the agent's policy on one tooling, shared by all its handles on
// it; a nil *View allows everything.
func (a *Agent) View(tooling string) *View {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	v := a.views[tooling]
	if v == nil {
		v = &View{a: a, tooling: tooling, name: grantName(a.name, tooling), lim: limit.New(limit.Limits{}, a.now)}
		v.apply((*a.grants.Load())[tooling])
		a.views[tooling] = v
	}
	return v
}

// View checks one agent's operations on one tooling.
type View struct {
	a       *Agent
	tooling string
	name    string // the grant's table, "agent.<agent>.grants.<tooling>"

	grant atomic.Pointer[Grant]
	lim   *limit.Limiter // the grant's limits; its state outlives grants
}

// apply installs g (under a.mu).
func (v *View) apply(g *Grant) {
	var l limit.Limits
	if g != nil {
		l = limit.Limits{MaxConcurrent: g.maxConc, N: g.rate, Per: time.Second}
	}
	v.lim.Set(l)
	v.grant.Store(g)
}

// Grant is the current grant (nil: everything allowed).
func (v *View) Grant() *Grant {
	if v == nil {
		return nil
	}
	return v.grant.Load()
}

// Tool checks a call of tool (op names the operation for the metric):
// denied when the grant does not allow it.
func (v *View) Tool(op, tool string) *tooling.Error {
	if v == nil {
		return nil
	}
	g := v.grant.Load()
	if g.AllowTool(tool) {
		return nil
	}
	v.denied(op)
	return tooling.Errorf(tooling.CodeDenied, "tool %q is not granted to agent %q on tooling %q: %s", tool, v.a.name, v.tooling, g.whyTool(tool))
}

// URI checks a read or subscription of uri: denied when the grant does not
// allow it.
func (v *View) URI(op, uri string) *tooling.Error {
	if v == nil {
		return nil
	}
	g := v.grant.Load()
	if g.AllowURI(uri) {
		return nil
	}
	v.denied(op)
	return tooling.Errorf(tooling.CodeDenied, "resource %q is not granted to agent %q on tooling %q: %s.resources [%s] has no match",
		uri, v.a.name, v.tooling, g.name, quoted(g.resources))
}

func (v *View) denied(op string) {
	if v.a.rec != nil {
		v.a.rec.PolicyDenied(v.a.name, v.tooling, op)
	}
}

// Acquire admits one call under the limits: busy at once when the agent
// already has max_concurrent_calls calls running on this tooling or its
// calls_per_second bucket is empty. Every nil return is paired with one
// Release when the call ends.
func (v *View) Acquire() *tooling.Error {
	if v == nil {
		return nil
	}
	if n, ok := v.lim.Enter(); !ok {
		return v.limited(limit.Concurrent, fmt.Sprintf("agent %q already has %d calls running on tooling %q: %s.max_concurrent_calls = %d",
			v.a.name, n, v.tooling, v.name, v.lim.Limits().MaxConcurrent))
	}
	if !v.lim.Take() {
		v.lim.Release()
		return v.limited(limit.CallsPerSecond, fmt.Sprintf("agent %q is over its call rate on tooling %q: %s.calls_per_second = %g",
			v.a.name, v.tooling, v.name, v.lim.Limits().N))
	}
	return nil
}

// Release ends a call Acquire admitted.
func (v *View) Release() {
	if v != nil {
		v.lim.Release()
	}
}

// limited counts a refusal over the limit called name and returns its
// busy error.
func (v *View) limited(name, msg string) *tooling.Error {
	if v.a.rec != nil {
		v.a.rec.AgentLimited(v.a.name, v.tooling, name)
	}
	return tooling.Errorf(tooling.CodeBusy, "%s", msg)
}
