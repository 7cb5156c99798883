// Package peer makes a remote A2A agent ([peer.<name>] a2a = its card's
// URL) a target of messages like a local agent: a Peer streams each
// message to it with a2a-go's client (A2A 1.0, or 0.3 through a2acompat,
// whichever its card offers) and turns the remote task's events into the
// message's reply: artifact text as deltas, completed as the reply, failed
// as a reply-error. The message's session is the A2A contextId.
package peer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tracing"
)

// cancelTimeout bounds telling the remote agent that a message was
// cancelled.
const cancelTimeout = 10 * time.Second

// Options configure a Peer.
type Options struct {
	// Name is the peer's name ([peer.<name>]), the agent name senders use.
	Name string
	// CardURL is the URL of the remote agent's card (required).
	CardURL string
	// Token, when set, is sent as a bearer token with every request.
	Token string
	// HTTPClient makes the requests (http.DefaultClient's transport).
	HTTPClient *http.Client
	// Log gets the remote's failures (zap.NewNop if nil).
	Log *zap.Logger
}

// Peer is one remote agent. Close it to stop its streams.
type Peer struct {
	name, cardURL string
	hc            *http.Client
	log           *zap.Logger
	ctx           context.Context
	stop          context.CancelFunc
	wg            sync.WaitGroup

	mu     sync.Mutex
	client *a2aclient.Client // made from the card on first use
}

// New is the peer opts describe; nothing is fetched before its first
// message.
func New(opts Options) (*Peer, error) {
	if opts.CardURL == "" {
		return nil, fmt.Errorf("peer %s: no card URL", opts.Name)
	}
	hc := &http.Client{}
	if opts.HTTPClient != nil {
		c := *opts.HTTPClient
		hc = &c
	}
	// A message's trace continues at the remote agent (traceparent).
	var base http.RoundTripper = tracing.Transport{Base: hc.Transport}
	if opts.Token != "" {
		base = bearer{token: opts.Token, base: base}
	}
	hc.Transport = base
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Peer{name: opts.Name, cardURL: opts.CardURL, hc: hc, log: log.Named("peer").With(zap.String("peer", opts.Name)),
		ctx: ctx, stop: stop}, nil
}

// Target is what a message.Router needs of the peer: the local API and
// any local agent may send to it (an agent's own sends_to is checked
// before, by its Outbox).
func (p *Peer) Target() message.Target {
	return message.Target{Accepts: []string{message.SenderAPI, message.SenderAgentPrefix + "*"}}
}

// Close stops every stream (their messages fail as unavailable) and waits
// for them.
func (p *Peer) Close() error {
	p.stop()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client != nil {
		return p.client.Destroy()
	}
	return nil
}

// Deliver sends m to the remote agent and returns once its stream is
// started; the reply follows in m. An unreachable card is ErrUnavailable.
func (p *Peer) Deliver(ctx context.Context, m *message.Message) error {
	c, err := p.connect(ctx)
	if err != nil {
		return message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable, "peer %s: %v", p.name, err)
	}
	sctx, cancel := context.WithCancel(tracing.Detached(p.ctx, ctx)) // the message's trace, not its sender's wait
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer cancel()
		// A cancelled message ends its stream.
		stop := m.Subscribe(func(ev message.Event) {
			if ev.Terminal() {
				cancel()
			}
		})
		defer stop()
		p.stream(sctx, c, m)
	}()
	return nil
}

func (p *Peer) connect(ctx context.Context) (*a2aclient.Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client != nil {
		return p.client, nil
	}
	r := &agentcard.Resolver{Client: p.hc, CardParser: a2av0.NewAgentCardParser()}
	card, err := r.Resolve(ctx, p.cardURL, agentcard.WithPath(""))
	if err != nil {
		return nil, fmt.Errorf("agent card %s: %w", p.cardURL, err)
	}
	c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithDefaultsDisabled(),
		a2aclient.WithJSONRPCTransport(p.hc), a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: p.hc}))
	if err != nil {
		return nil, fmt.Errorf("agent card %s: %w", p.cardURL, err)
	}
	p.client = c
	return c, nil
}

// stream sends m and follows the remote task to its end.
func (p *Peer) stream(ctx context.Context, c *a2aclient.Client, m *message.Message) {
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(m.Content()))
	msg.ContextID = m.Session()
	f := follower{m: m}
	ended, why := false, "the stream ended before the reply"
	for ev, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: msg}) {
		if err != nil {
			why = err.Error()
			break
		}
		if ended = f.event(ev); ended {
			break
		}
	}
	switch {
	case ended:
	case m.View().Status == message.StatusCancelled:
		if f.task != "" {
			p.cancelRemote(c, f.task)
		}
	case p.ctx.Err() != nil:
		f.fail(tooling.CodeUnavailable.String(), "peer "+p.name+": toolhostd is stopping")
	default:
		p.log.Debug("stream failed", zap.String("message", m.ID()), zap.String("reason", why))
		f.fail(tooling.CodeUnavailable.String(), "peer "+p.name+": "+why)
	}
}

// cancelRemote tells the remote agent that its task's message was
// cancelled here.
func (p *Peer) cancelRemote(c *a2aclient.Client, task a2a.TaskID) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), cancelTimeout)
	defer cancel()
	if _, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task}); err != nil && !errors.Is(err, a2a.ErrTaskNotCancelable) {
		p.log.Warn("cancel remote task", zap.String("task", string(task)), zap.Error(err))
	}
}

// follower turns one remote task's events into m's reply.
type follower struct {
	m        *message.Message
	task     a2a.TaskID
	streamed bool // artifact text went out as deltas
}

// event applies one event; true once the reply has ended.
func (f *follower) event(ev a2a.Event) bool {
	switch ev := ev.(type) {
	case *a2a.Message:
		return f.reply(text(ev.Parts))
	case *a2a.Task:
		f.task = ev.ID
		if !ev.Status.State.Terminal() && ev.Status.State != a2a.TaskStateInputRequired {
			return false
		}
		if !f.streamed { // a whole task (a non-streaming agent)
			var b strings.Builder
			for _, a := range ev.Artifacts {
				b.WriteString(text(a.Parts))
			}
			_ = f.m.Delta(b.String())
		}
		return f.status(ev.Status)
	case *a2a.TaskArtifactUpdateEvent:
		f.task, f.streamed = ev.TaskID, true
		_ = f.m.Delta(text(ev.Artifact.Parts))
		return false
	case *a2a.TaskStatusUpdateEvent:
		f.task = ev.TaskID
		return f.status(ev.Status)
	}
	return false
}

// status ends the reply at a terminal state (or input-required: the
// remote's question is its reply; the session's next message answers it).
func (f *follower) status(st a2a.TaskStatus) bool {
	said := ""
	if st.Message != nil {
		said = text(st.Message.Parts)
	}
	switch st.State {
	case a2a.TaskStateCompleted:
		return f.reply("")
	case a2a.TaskStateInputRequired:
		return f.reply(said)
	case a2a.TaskStateFailed, a2a.TaskStateRejected:
		if said == "" {
			said = "the remote agent's task " + strings.ToLower(strings.TrimPrefix(string(st.State), "TASK_STATE_"))
		}
		f.fail(message.CodeReplyError, said)
		return true
	case a2a.TaskStateCanceled:
		f.fail(tooling.CodeCancelled.String(), "the remote agent cancelled the task")
		return true
	case a2a.TaskStateAuthRequired:
		f.fail(tooling.CodeDenied.String(), "the remote agent needs authentication: "+said)
		return true
	}
	return false
}

func (f *follower) reply(s string) bool {
	_ = f.m.Reply(s)
	return true
}

// fail ends the reply unless it has ended (a cancelled message stays so).
func (f *follower) fail(code, text string) { _ = f.m.Fail(code, text) }

func text(parts a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text())
	}
	return b.String()
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}
