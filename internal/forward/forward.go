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
// event, never a hang, unless its agent is durable (Owner.Next): the host
// that takes the agent over resumes the message under the same id, and
// the relay follows it there, skipping the deltas it relayed already, or
// leaves it to this host's instance when this host took the agent over.
// A local cancel cancels the message at the owner.
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
	// maxLegs bounds how many owners (or returns to one whose stream
	// broke) a relay follows a durable agent's message to.
	maxLegs = 32
	// legPause is the pause before a relay follows the message at the
	// owner whose stream it could not resume (it may be leaving).
	legPause = time.Second
	// takeOverWait bounds how long the next owner of a durable agent may
	// take to resume a message it took over (start the agent, replay its
	// oplog): its reply stream is not found until then.
	takeOverWait = 30 * time.Second
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
	// open then ends unavailable (unless Next follows the message).
	Gone <-chan struct{}
	// Next, when set, is where the message is once this owner left the
	// cluster or its stream could not be resumed: its agent is durable,
	// and the host that takes the agent over resumes the message under the
	// same id. It waits, within its own bound, for a host to hold the
	// agent and returns that host, or here when this host does (its
	// instance takes the message over: message.Message.Resumed), or an
	// error when none does.
	Next func(ctx context.Context) (next Owner, here bool, err error)
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
	// The relay's context (bctx) ends with the message or the forwarder;
	// the first owner's stream's (sctx) also with that owner.
	bctx, bcancel := context.WithCancel(tracing.Detached(f.ctx, ctx))
	sctx, cancel := context.WithCancel(bctx)
	unbind := context.AfterFunc(ctx, cancel)
	s, err := c.Forward(sctx, control.ForwardRequest{
		By: f.o.Self, ID: m.ID(), Agent: m.Agent(), Session: m.Session(), Sender: m.Sender(),
		Content: m.Content(), IdempotencyKey: m.IdempotencyKey(), Audit: m.Audit(),
	})
	if err != nil {
		cancel()
		bcancel()
		return refusal(owner.Name, err)
	}
	if !unbind() { // the sender gave up as the owner accepted: undo it there
		cancel()
		bcancel()
		s.Close()
		f.cancelRemote(c, m, s.ID)
		return message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable, "host %s: %v", owner.Name, ctx.Err())
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer bcancel()
		f.relay(bctx, bcancel, m, leg{owner: owner, c: c, s: s, id: s.ID, ctx: sctx, cancel: cancel})
	}()
	return nil
}

// leg is the relay of a message from one owner: its client, the
// message's id there, its open stream (nil: to follow from the event
// after the relayed ones) and the context the stream reads under, which
// ends with the owner's membership.
type leg struct {
	owner  Owner
	c      *control.Client
	s      *control.EventStream
	id     string
	ctx    context.Context
	cancel context.CancelFunc
	// moved: the owner took the message over from another (a durable
	// agent's next host), which it may not have resumed yet.
	moved bool
}

// relay copies the owners' events into m until the reply ends: from the
// first owner, resuming a broken stream, then, for a durable agent's
// message whose owner left (Owner.Next), from the host that resumed it.
// It ends m unavailable when it cannot.
func (f *Forwarder) relay(ctx context.Context, cancel context.CancelFunc, m *message.Message, l leg) {
	stopSub := m.Subscribe(func(ev message.Event) {
		if ev.Terminal() { // ended: relayed, or cancelled here
			cancel()
		}
	})
	defer stopSub()
	r := relayer{m: m}
	for legs := 1; ; legs++ {
		why, ended := f.follow(&r, l)
		if ended {
			return
		}
		if l.owner.Next == nil || legs == maxLegs || ctx.Err() != nil {
			r.fail(why)
			return
		}
		next, here, err := l.owner.Next(ctx)
		switch {
		case err != nil:
			r.fail(why + "; " + err.Error())
			return
		case here:
			f.takenOver(ctx, &r, why)
			return
		case next.Name == l.owner.Name && !closed(l.owner.Gone):
			// Its stream broke and it still holds the agent: try it again
			// after a pause (it may be leaving).
			t := time.NewTimer(legPause)
			select {
			case <-t.C:
			case <-ctx.Done():
			case <-l.owner.Gone:
			}
			t.Stop()
		default:
			f.log.Info("following a durable agent's message to its next host",
				zap.String("message_id", m.ID()), zap.String("from_host", l.owner.Name), zap.String("host", next.Name))
		}
		lctx, lcancel := context.WithCancel(ctx)
		// Another host, or the same one come back (a new member: its
		// instance resumes the message too).
		moved := l.moved || next.Name != l.owner.Name || closed(l.owner.Gone)
		l = leg{owner: next, c: control.NewClient(next.URL, f.o.Token, f.hc), id: m.ID(), ctx: lctx, cancel: lcancel, moved: moved}
		r.restart()
	}
}

// takenOver waits for this host's instance of the agent to take m over
// (it resumes it from the oplog, keeping what was relayed), or for m to
// end; it ends m unavailable past takeOverWait.
func (f *Forwarder) takenOver(ctx context.Context, r *relayer, why string) {
	t := time.NewTimer(takeOverWait)
	defer t.Stop()
	select {
	case <-r.m.Resumed():
		f.log.Info("a durable agent's forwarded message resumed here", zap.String("message_id", r.m.ID()))
	case <-r.m.Done():
	case <-ctx.Done():
		if f.ctx.Err() != nil {
			r.fail("toolhostd is stopping: the reply was cut")
		}
	case <-t.C:
		r.fail(fmt.Sprintf("%s; this host took its agent over and did not resume the message within %v", why, takeOverWait))
	}
}

// follow relays l's owner's events into r's message, resuming a broken
// stream, until the reply ends (ended; or the message was cancelled here,
// or the forwarder closed: the message is ended then) or the owner is lost
// (why). A moved leg's owner may not have resumed the message yet: its
// stream is looked for up to takeOverWait.
func (f *Forwarder) follow(r *relayer, l leg) (why string, ended bool) {
	defer l.cancel()
	m, owner := r.m, l.owner
	if owner.Gone != nil {
		var wg sync.WaitGroup
		defer wg.Wait()
		defer l.cancel() // before the Wait
		wg.Go(func() {
			select {
			case <-owner.Gone:
				l.cancel()
			case <-l.ctx.Done():
			}
		})
	}
	s := l.s
	var last uint64
	pause := resumePause
	var err error // why the stream broke last
	until := time.Now().Add(takeOverWait)
	for attempt := 0; ; attempt++ {
		if s != nil {
			var ended bool
			ended, err = s.Read(&last, r.apply)
			s.Close()
			if ended {
				return "", true
			}
		}
		select {
		case <-m.Done(): // cancelled here
			if m.View().Status == message.StatusCancelled {
				f.cancelRemote(l.c, m, l.id)
			}
			return "", true
		default:
		}
		switch {
		case f.ctx.Err() != nil:
			r.fail("toolhostd is stopping: the reply from host " + owner.Name + " was cut")
			return "", true
		case closed(owner.Gone):
			return "host " + owner.Name + " left the cluster before the reply ended", false
		case attempt >= control.MaxResumes && !(l.moved && time.Now().Before(until)):
			return "the reply stream from host " + owner.Name + " broke: " + errText(err), false
		}
		f.log.Debug("reply stream broke; resuming", zap.String("message", m.ID()), zap.String("host", owner.Name), zap.Error(err))
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-l.ctx.Done():
		}
		t.Stop()
		pause = min(2*pause, legPause)
		s = nil
		if l.ctx.Err() != nil {
			continue // the checks above say why
		}
		ns, ferr := l.c.Follow(l.ctx, m.Agent(), l.id, last)
		var ae *control.APIError
		switch {
		case ferr == nil:
			s = ns
		case errors.As(ferr, &ae) && ae.Status == http.StatusNotFound && l.moved && time.Now().Before(until):
			err = ferr // not resumed there yet
		case errors.As(ferr, &ae) && ae.Status == http.StatusNotFound:
			return "host " + owner.Name + " no longer has message " + l.id + " (it restarted)", false
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
	// skip is the bytes of delta text a new owner's stream, followed from
	// its start, repeats (the durable agent's replay made the reply so far
	// again): relayed already.
	skip int
}

// restart prepares the relay of the next owner's stream from its start.
func (r *relayer) restart() { r.skip = r.deltas }

func (r *relayer) apply(ev message.Event) {
	select {
	case <-r.m.Resumed(): // this host's instance answers it now
		return
	default:
	}
	switch ev.Kind {
	case message.KindDelta:
		text := ev.Text
		if n := min(r.skip, len(text)); n > 0 {
			r.skip -= n
			if text = text[n:]; text == "" {
				return
			}
		}
		if r.m.Delta(text) == nil {
			r.deltas += len(text)
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
