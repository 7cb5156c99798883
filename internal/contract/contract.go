// Package contract is the agent's side of the host contract: an Agent (its
// inbox, grants, policy and the tables of what it made), its Handles on
// toolings (calls, reads, subscriptions, through package gateway) and its
// ProviderHandles on model providers (chat and chat-stream), each
// operation checked against the agent's policy and written to the audit
// log. Dropping a handle or closing the agent cancels everything made
// through it.
//
// Nothing here knows about WebAssembly: the host's WIT functions call the
// methods of Agent, Handle and ProviderHandle one to one.
package contract

import (
	"context"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/audit"
	"github.com/toolhostd/toolhostd/internal/gateway"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/policy"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// An Option sets up an Agent at NewAgent.
type Option func(*Agent)

// WithLog logs the agent's operations to l (named "contract", with the
// agent's name); the default logs nothing.
func WithLog(l *zap.Logger) Option { return func(a *Agent) { a.log = l } }

// WithGrants lets the agent get only the toolings granted reports true
// for; the default: all.
func WithGrants(granted func(tooling string) bool) Option {
	return func(a *Agent) { a.grants = granted }
}

// WithPolicy narrows what the agent may do on the toolings it is granted;
// the default (or nil): everything.
func WithPolicy(p *policy.Agent) Option { return func(a *Agent) { a.pol = p } }

// WithAudit writes every operation of the agent to l; the default (or
// nil): none.
func WithAudit(l *audit.Log) Option { return func(a *Agent) { a.audit = l } }

// WithProviders makes provider.get resolve names through lookup; the
// default: no provider is configured.
func WithProviders(lookup ProviderLookup) Option { return func(a *Agent) { a.providers = lookup } }

// WithProviderAccess sets what the agent may do with the providers; the
// default: get every one, unwrapped, its requests' text not audited.
func WithProviderAccess(acc ProviderAccess) Option { return func(a *Agent) { a.provAccess = acc } }

// WithChatObserver reports every finished chat and chat stream of the
// agent to f (the metrics).
func WithChatObserver(f func(ChatRecord)) Option { return func(a *Agent) { a.observe = f } }

// NewAgent registers an agent with hub's toolings: in is its inbox (the
// host owns it and its shutdown). The agent's context ends with the hub's
// Serve, at Close, or when in shuts down.
func NewAgent(hub *gateway.Hub, name string, in *inbox.Inbox, opts ...Option) *Agent {
	ctx, cancel := context.WithCancel(hub.Context())
	a := &Agent{
		hub:     hub,
		name:    name,
		in:      in,
		ctx:     ctx,
		cancel:  cancel,
		calls:   make(map[string]*call),
		subs:    make(map[string]*sub),
		handles: make(map[*Handle]struct{}),
		streams: make(map[string]*stream),
		provs:   make(map[*ProviderHandle]struct{}),
	}
	for _, o := range opts {
		o(a)
	}
	a.mb = message.NewMailbox(in, nil)
	if a.messaging.Router != nil {
		a.ob = message.NewOutbox(a.messaging.Router, name, in)
	}
	if a.log == nil {
		a.log = zap.NewNop()
	}
	a.log = a.log.Named("contract").With(zap.String("agent", name))
	// Once the inbox is shut down no result can be delivered: every call of
	// the agent is cancelled.
	a.stopWatch = context.AfterFunc(in.Context(), cancel)
	return a
}

// Get returns a new handle on the tooling called name: not-found when there
// is none, denied when the agent was not granted it, cancelled after Close.
func (a *Agent) Get(name string) (*Handle, error) {
	s, ok := a.hub.Lookup(name)
	if !ok {
		return nil, tooling.Errorf(tooling.CodeNotFound, "no tooling named %q", name)
	}
	if a.grants != nil && !a.grants(name) {
		err := tooling.Errorf(tooling.CodeDenied, "agent %q is not granted tooling %q", a.name, name)
		a.deniedGet(name, err)
		return nil, err
	}
	hd := &Handle{a: a, s: s, pol: a.pol.View(name), calls: make(map[string]*call), subs: make(map[string]*sub)}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, errAgentClosed()
	}
	a.handles[hd] = struct{}{}
	return hd, nil
}

func newID() string { return uuid.NewString() }

func errAgentClosed() *tooling.Error {
	return tooling.Errorf(tooling.CodeCancelled, "the agent is stopping")
}

func errHandleClosed() *tooling.Error {
	return tooling.Errorf(tooling.CodeCancelled, "the tooling handle was dropped")
}
