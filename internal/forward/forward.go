// Package forward relays a message to the cluster host that runs its
// agent: the receiving host's router accepts the message as usual and its
// daemon, finding the agent held by another member, hands it to a
// Forwarder, which posts it to that member's control API marked as
// forwarded (control.HeaderForwardedBy: the owner never forwards it
// again) with the original sender, session, idempotency key and audit flag,
// and relays the reply's events (deltas, reply, error) into the local
// message. Readers of the local message (SSE, Last-Event-ID resume, a
// waiting JSON request) see the owner's reply as if the agent ran here.
//
// A broken stream is resumed from the last relayed event; a stream whose
// owner leaves the cluster (its member key goes: it stopped, died or its
// lease expired) or cannot be resumed ends with an unavailable error
// event, never a hang. A local cancel cancels the message at the owner.
package forward

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tracing"
)

// Bounds of a relayed stream.
const (
	// resumePause is the pause before the first resume (doubling).
	resumePause = 50 * time.Millisecond
	// cancelTimeout bounds telling the owner that a message was
	// cancelled here.
	cancelTimeout = 5 * time.Second
	// dialTimeout bounds connecting to another host (one that is cut
	// off does not answer at all).
	dialTimeout = 5 * time.Second
)

// Options configure a Forwarder.
type Options struct {
	// Self is this member's name, sent as the forwarding member.
	Self string
	// Token is the bearer token of the other hosts' control APIs (the
	// shared control_token, expanded).
	Token string
	// Log gets relay failures (nil: none).
	Log *zap.Logger
}

// Owner is the member a message goes to.
type Owner struct {
	Name string // member name
	URL  string // its control API (http://host:port)
	// Gone is closed once the member left the cluster: a stream still
	// open then ends unavailable.
	Gone <-chan struct{}
}

// Forwarder forwards messages to other hosts. Close it to end its
// streams.
type Forwarder struct {
	o    Options
	log  *zap.Logger
	hc   *http.Client
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// New makes a forwarder.
func New(o Options) *Forwarder {
	log := o.Log
	if log == nil {
		log = zap.NewNop()
	}
	// No overall Timeout: replies stream.
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second,
		DialContext: (&net.Dialer{Timeout: dialTimeout, KeepAlive: 15 * time.Second}).DialContext}}
	ctx, stop := context.WithCancel(context.Background())
	return &Forwarder{o: o, log: log.Named("forward"), hc: hc, ctx: ctx, stop: stop}
}

// Close ends every relayed stream (their messages fail unavailable) and
// waits for them.
func (f *Forwarder) Close() error {
	f.stop()
	f.wg.Wait()
	f.hc.CloseIdleConnections()
	return nil
}

// Deliver forwards m to owner and returns once owner accepted it: its
// reply then follows in m. A refusal of the owner is
// returned as the router's refusal of the same kind (unknown agent,
// denied, busy, ...); errors matching ErrMoved may succeed at another try.
func (f *Forwarder) Deliver(ctx context.Context, m *message.Message, owner Owner) error {
	if f.ctx.Err() != nil {
		return message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable, "toolhostd is stopping")
	}
	c := control.NewClient(owner.URL, f.o.Token, f.hc) // cheap: the transport is f.hc's
	// The stream outlives ctx (the sender's request): only the wait for
	// the owner's answer is bounded by it.
	// It carries the message's trace context: the owner's message is a
	// child of this one's span.
	sctx, cancel := context.WithCancel(tracing.Detached(f.ctx, ctx))
	unbind := context.AfterFunc(ctx, cancel)
	s, err := c.Forward(sctx, control.ForwardRequest{
		By: f.o.Self, ID: m.ID(), Agent: m.Agent(), Session: m.Session(), Sender: m.Sender(),
		Content: m.Content(), IdempotencyKey: m.IdempotencyKey(), Audit: m.Audit(),
	})
	if err != nil {
		cancel()
		return refusal(owner.Name, err)
	}
	if !unbind() { // the sender gave up as the owner accepted: undo it there
		cancel()
		s.Close()
		f.cancelRemote(c, m, s.ID)
		return message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable, "host %s: %v", owner.Name, ctx.Err())
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer cancel()
		f.relay(sctx, cancel, c, m, s, owner)
	}()
	return nil
}

// relay copies the owner's events into m until the reply ends, resuming
// a broken stream; it ends m unavailable when it cannot.
func (f *Forwarder) relay(ctx context.Context, cancel context.CancelFunc, c *control.Client, m *message.Message, s *control.EventStream, owner Owner) {
	stopSub := m.Subscribe(func(ev message.Event) {
		if ev.Terminal() { // ended: relayed, or cancelled here
			cancel()
		}
	})
	defer stopSub()
	gone := owner.Gone
	if gone != nil {
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel() // before the Wait
		wg.Go(func() {
			select {
			case <-gone:
				cancel()
			case <-ctx.Done():
			}
		})
	}
	r := relayer{m: m}
	id := s.ID
	var last uint64
	pause := resumePause
	var err error // why the stream broke last
	for attempt := 0; ; attempt++ {
		if s != nil {
			var ended bool
			ended, err = s.Read(&last, r.apply)
			s.Close()
			if ended {
				return
			}
		}
		select {
		case <-m.Done(): // cancelled here
			if m.View().Status == message.StatusCancelled {
				f.cancelRemote(c, m, id)
			}
			return
		default:
		}
		switch {
		case f.ctx.Err() != nil:
			r.fail("toolhostd is stopping: the reply from host " + owner.Name + " was cut")
			return
		case closed(gone):
			r.fail("host " + owner.Name + " left the cluster before the reply ended")
			return
		case attempt == control.MaxResumes:
			r.fail("the reply stream from host " + owner.Name + " broke: " + errText(err))
			return
		}
		f.log.Debug("reply stream broke; resuming", zap.String("message", m.ID()), zap.String("host", owner.Name), zap.Error(err))
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		pause *= 2
		s = nil
		if ctx.Err() != nil {
			continue // the checks above say why
		}
		ns, ferr := c.Follow(ctx, m.Agent(), id, last)
		var ae *control.APIError
		switch {
		case ferr == nil:
			s = ns
		case errors.As(ferr, &ae) && ae.Status == http.StatusNotFound:
			r.fail("host " + owner.Name + " no longer has message " + id + " (it restarted)")
			return
		default:
			err = ferr
		}
	}
}

// cancelRemote cancels the owner's message id (m was cancelled here).
func (f *Forwarder) cancelRemote(c *control.Client, m *message.Message, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
	defer cancel()
	if _, err := c.CancelMessage(ctx, m.Agent(), id); err != nil {
		f.log.Debug("cancel the message at its host", zap.String("message", m.ID()), zap.Error(err))
	}
}

// relayer applies the owner's events to the local message.
type relayer struct {
	m      *message.Message
	deltas int // bytes of delta text relayed: the reply's prefix here
}

func (r *relayer) apply(ev message.Event) {
	switch ev.Kind {
	case message.KindDelta:
		if r.m.Delta(ev.Text) == nil {
			r.deltas += len(ev.Text)
		}
	case message.KindReply:
		rest := ev.Text // the whole reply: the deltas relayed, then the rest
		if len(rest) >= r.deltas {
			rest = rest[r.deltas:]
		}
		_ = r.m.Reply(rest)
	case message.KindError:
		_ = r.m.Fail(ev.Code, ev.Text)
	}
}

// fail ends the message unavailable (unless it has ended).
func (r *relayer) fail(why string) { _ = r.m.Fail(tooling.CodeUnavailable.String(), why) }

func closed(ch <-chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func errText(err error) string {
	if err == nil {
		return "it ended early"
	}
	return err.Error()
}

// refusal is the router's refusal for the owner's answer err.
func refusal(owner string, err error) error {
	var ae *control.APIError
	if !errors.As(err, &ae) {
		return moved(fmt.Sprintf("host %s cannot be reached: %v", owner, err))
	}
	msg := "host " + owner + ": " + ae.Message
	switch ae.Status {
	case http.StatusNotFound:
		return message.Refuse(message.ErrUnknownAgent, tooling.CodeNotFound, "%s", msg)
	case http.StatusForbidden:
		return message.Refuse(message.ErrDenied, tooling.CodeDenied, "%s", msg)
	case http.StatusConflict:
		return message.Refuse(message.ErrUnsupported, tooling.CodeUnsupported, "%s", msg)
	case http.StatusRequestEntityTooLarge:
		return message.Refuse(message.ErrTooLarge, tooling.CodeInvalidArgument, "%s", msg)
	case http.StatusTooManyRequests:
		return message.Refuse(message.ErrBusy, tooling.CodeBusy, "%s", msg)
	case http.StatusMisdirectedRequest:
		return moved(msg)
	case http.StatusUnauthorized:
		return message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable,
			"host %s refused this host's token: the hosts of a cluster must share [host] control_token", owner)
	}
	return message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable, "%s", msg)
}

// movedError is an unavailable refusal that matches ErrMoved.
type movedError struct{ err error }

func (e movedError) Error() string   { return e.err.Error() }
func (e movedError) Unwrap() []error { return []error{e.err, ErrMoved} }

func moved(msg string) error {
	return movedError{message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable, "%s", msg)}
}
