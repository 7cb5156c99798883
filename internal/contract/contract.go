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
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/audit"
	"github.com/toolhostd/toolhostd/internal/gateway"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/policy"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Options set up an Agent at NewAgent; the zero Options are an agent that
// logs nothing, gets every tooling, unnarrowed and unaudited, and has no
// provider and no way to send messages.
type Options struct {
	// Log logs the agent's operations (named "contract", with the agent's
	// name); nil: nothing.
	Log *zap.Logger
	// Grants lets the agent get only the toolings it reports true for;
	// nil: all.
	Grants func(tooling string) bool
	// Policy narrows what the agent may do on the toolings it is granted;
	// nil: everything.
	Policy *policy.Agent
	// Audit gets every operation of the agent; nil: none.
	Audit *audit.Log
	// Providers resolves provider.get's names; nil: no provider is
	// configured.
	Providers ProviderLookup
	// ProviderAccess is what the agent may do with the providers; the
	// zero value: get every one, unwrapped, its requests' text not
	// audited.
	ProviderAccess ProviderAccess
	// ChatObserver gets every finished chat and chat stream of the agent
	// (the metrics); nil: none.
	ChatObserver func(ChatRecord)
	// Messaging is how the agent sends messages; the zero value: send is
	// not-found. Every agent has a mailbox for the messages delivered to
	// it.
	Messaging Messaging
	// Tracer starts the agent's execute_tool and chat spans; nil: none.
	Tracer trace.TracerProvider
	// MailJournal, if set, records the messages of a durable instance
	// (message.NewJournaledMailbox).
	MailJournal message.Journal
	// CaptureContent records tool arguments and results, prompts and
	// completions on the spans.
	CaptureContent bool
}

// NewAgent registers an agent with hub's toolings: in is its inbox (the
// host owns it and its shutdown). The agent's context ends with the hub's
// Serve, at Close, or when in shuts down.
func NewAgent(hub *gateway.Hub, name string, in *inbox.Inbox, o Options) *Agent {
	ctx, cancel := context.WithCancel(hub.Context())
	a := &Agent{
		hub:  hub,
		name: name,
		in:   in,
		log:  o.Log,
		life: lifetime{ctx: ctx, cancel: cancel},
		acc:  access{grants: o.Grants, pol: o.Policy},
		rec:  recorders{audit: o.Audit, capture: o.CaptureContent},
		tab: tables{
			calls:   make(map[string]*call),
			subs:    make(map[string]*sub),
			handles: make(map[*Handle]struct{}),
			streams: make(map[string]*stream),
			provs:   make(map[*ProviderHandle]struct{}),
		},
		prov: providerSide{lookup: o.Providers, access: o.ProviderAccess, observe: o.ChatObserver},
		mail: mail{send: o.Messaging},
	}
	if o.Tracer != nil {
		a.rec.tracer = o.Tracer.Tracer(tracerName)
	}
	if o.MailJournal != nil {
		a.mail.box = message.NewJournaledMailbox(in, nil, o.MailJournal)
	} else {
		a.mail.box = message.NewMailbox(in, nil)
	}
	if a.mail.send.Router != nil {
		a.mail.out = message.NewOutbox(a.mail.send.Router, name, in)
	}
	if a.log == nil {
		a.log = zap.NewNop()
	}
	a.log = a.log.Named("contract").With(zap.String("agent", name))
	// Once the inbox is shut down no result can be delivered: every call of
	// the agent is cancelled.
	a.life.stopWatch = context.AfterFunc(in.Context(), cancel)
	return a
}

// Get returns a new handle on the tooling called name: not-found when there
// is none, denied when the agent was not granted it, cancelled after Close.
func (a *Agent) Get(name string) (*Handle, error) {
	s, ok := a.hub.Lookup(name)
	if !ok {
		return nil, tooling.Errorf(tooling.CodeNotFound, "no tooling named %q", name)
	}
	if a.acc.grants != nil && !a.acc.grants(name) {
		err := tooling.Errorf(tooling.CodeDenied, "agent %q is not granted tooling %q", a.name, name)
		a.deniedGet(name, err)
		return nil, err
	}
	hd := &Handle{a: a, s: s, pol: a.acc.pol.View(name), calls: make(map[string]*call), subs: make(map[string]*sub)}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, errAgentClosed()
	}
	a.tab.handles[hd] = struct{}{}
	return hd, nil
}

func newID() string { return uuid.NewString() }

func errAgentClosed() *tooling.Error {
	return tooling.Errorf(tooling.CodeCancelled, "the agent is stopping")
}

func errHandleClosed() *tooling.Error {
	return tooling.Errorf(tooling.CodeCancelled, "the tooling handle was dropped")
}
