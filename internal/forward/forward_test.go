package forward_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/control/controltest"
	"github.com/toolhostd/toolhostd/internal/forward"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "forward-test-token"

// scripted is the owner's agents: "stream" answers a, b, then c; "hold"
// sends a delta and keeps the reply open until it is cancelled; "mcponly"
// accepts only the mcp sender. It records what it was given.
type scripted struct {
	mu   sync.Mutex
	got  []message.Request
	held chan *message.Message
}

func (s *scripted) Target(agent string) (message.Target, error) {
	switch agent {
	case "stream", "hold":
		return message.Target{Accepts: []string{"*"}}, nil
	case "mcponly":
		return message.Target{Accepts: []string{message.SenderMCP}}, nil
	}
	return message.Target{}, message.Refuse(message.ErrUnknownAgent, tooling.CodeNotFound, "no agent %q", agent)
}

func (s *scripted) Deliver(ctx context.Context, m *message.Message) error {
	by, _ := control.ForwardedBy(ctx)
	s.mu.Lock()
	s.got = append(s.got, message.Request{ID: m.ID(), Agent: m.Agent(), Session: m.Session(), Sender: m.Sender(),
		Content: m.Content(), IdempotencyKey: m.IdempotencyKey() + "|by=" + by, Audit: m.Audit()})
	s.mu.Unlock()
	switch m.Agent() {
	case "stream", "mcponly":
		go func() {
			_ = m.Delta("a")
			_ = m.Delta("b")
			_ = m.Reply("c")
		}()
	case "hold":
		go func() {
			_ = m.Delta("part")
			s.held <- m
		}()
	}
	return nil
}

// owner is a host's control API over a router of scripted agents.
type owner struct {
	agents *scripted
	router *message.Router
	url    string
}

func newOwner(t *testing.T) *owner {
	t.Helper()
	a := &scripted{held: make(chan *message.Message, 4)}
	r := message.NewRouter(a, message.Options{})
	srv := controltest.Serve(t, control.Options{Backend: controltest.NewBackend(), Messages: r, Listen: "127.0.0.1:0", Token: token})
	return &owner{agents: a, router: r, url: "http://" + srv.TCPAddr().String()}
}

// receiver is the receiving host: a router whose agents all run at o.
type receiver struct {
	fwd   *forward.Forwarder
	owner forward.Owner
}

func (r *receiver) Target(string) (message.Target, error) {
	return message.Target{Accepts: []string{"*"}}, nil
}

func (r *receiver) Deliver(ctx context.Context, m *message.Message) error {
	return r.fwd.Deliver(ctx, m, r.owner)
}

func newReceiver(t *testing.T, o forward.Owner, tok string) *message.Router {
	t.Helper()
	f := forward.New(forward.Options{Self: "recv", Token: tok})
	t.Cleanup(func() { _ = f.Close() })
	return message.NewRouter(&receiver{fwd: f, owner: o}, message.Options{})
}

func wait(t *testing.T, m *message.Message) message.View {
	t.Helper()
	testenv.Recv(t, m.Done(), 10*time.Second, "the reply of "+m.ID())
	return m.View()
}

// TestRelay: a forwarded message's reply is relayed event by event, with
// the sender, session, idempotency key, audit flag and id the owner gets; the owner's
// refusals come back as the router's (unknown agent, sender not accepted,
// a bad token), an unreachable owner as ErrMoved.
func TestRelay(t *testing.T) {
	o := newOwner(t)
	gone := make(chan struct{})
	r := newReceiver(t, forward.Owner{Name: "o", URL: o.url, Gone: gone}, token)
	ctx := t.Context()
	m, _, err := r.Send(ctx, message.Request{Agent: "stream", Session: "s", Sender: "agent:x", Content: "hi", IdempotencyKey: "k1", Audit: true})
	if err != nil {
		t.Fatal(err)
	}
	if v := wait(t, m); v.Status != message.StatusDone || v.Reply != "abc" || v.Events != 3 {
		t.Fatalf("relayed: %+v", v)
	}
	evs, _, _ := m.After(0)
	if evs[0].Text != "a" || evs[1].Text != "b" || evs[2].Kind != message.KindReply || evs[2].Text != "abc" {
		t.Errorf("events %+v", evs)
	}
	o.agents.mu.Lock()
	got := o.agents.got[0]
	o.agents.mu.Unlock()
	want := message.Request{ID: m.ID(), Agent: "stream", Session: "s", Sender: "agent:x", Content: "hi", IdempotencyKey: "k1|by=recv", Audit: true}
	if got != want {
		t.Errorf("the owner got %+v, want %+v", got, want)
	}
	// The owner checks the original sender.
	if m, _, err := r.Send(ctx, message.Request{Agent: "mcponly", Sender: message.SenderMCP, Content: "x"}); err != nil || wait(t, m).Reply != "abc" {
		t.Errorf("mcp to mcponly: %v", err)
	}
	o.agents.mu.Lock()
	if got := o.agents.got[1]; got.Audit {
		t.Errorf("a message sent without the audit flag reached the owner with it: %+v", got)
	}
	o.agents.mu.Unlock()
	for _, tc := range []struct {
		agent, sender string
		want          error
	}{
		{"mcponly", message.SenderAPI, message.ErrDenied},
		{"nobody", message.SenderAPI, message.ErrUnknownAgent},
	} {
		if _, _, err := r.Send(ctx, message.Request{Agent: tc.agent, Sender: tc.sender, Content: "x"}); !errors.Is(err, tc.want) {
			t.Errorf("%s from %s: %v, want %v", tc.agent, tc.sender, err, tc.want)
		}
	}
	bad := newReceiver(t, forward.Owner{Name: "o", URL: o.url}, "wrong")
	if _, _, err := bad.Send(ctx, message.Request{Agent: "stream", Sender: "api", Content: "x"}); !errors.Is(err, message.ErrUnavailable) ||
		errors.Is(err, forward.ErrMoved) || !strings.Contains(err.Error(), "control_token") {
		t.Errorf("with a wrong token: %v", err)
	}
	nobody := newReceiver(t, forward.Owner{Name: "n", URL: "http://127.0.0.1:1"}, token) // tcpmux: nobody listens
	if _, _, err := nobody.Send(ctx, message.Request{Agent: "stream", Sender: "api", Content: "x"}); !errors.Is(err, forward.ErrMoved) ||
		!errors.Is(err, message.ErrUnavailable) {
		t.Errorf("to an unreachable owner: %v", err)
	}
}

// TestCancelAndGone: a message cancelled at the receiving host is
// cancelled at its owner; one whose owner leaves the cluster mid-reply
// ends unavailable at once.
func TestCancelAndGone(t *testing.T) {
	o := newOwner(t)
	gone := make(chan struct{})
	r := newReceiver(t, forward.Owner{Name: "o", URL: o.url, Gone: gone}, token)
	ctx := t.Context()

	m, _, err := r.Send(ctx, message.Request{Agent: "hold", Sender: "api", Content: "x"})
	if err != nil {
		t.Fatal(err)
	}
	remote := testenv.Recv(t, o.agents.held, 10*time.Second, "the owner's message")
	testenv.Eventually(t, 10*time.Second, "the delta relayed", func() bool { return m.View().Reply == "part" })
	m.Cancel()
	testenv.Recv(t, remote.Done(), 10*time.Second, "the owner's message cancelled")
	if v := remote.View(); v.Status != message.StatusCancelled {
		t.Errorf("the owner's message: %+v", v)
	}

	m, _, err = r.Send(ctx, message.Request{Agent: "hold", Sender: "api", Content: "y"})
	if err != nil {
		t.Fatal(err)
	}
	remote = testenv.Recv(t, o.agents.held, 10*time.Second, "the owner's message")
	testenv.Eventually(t, 10*time.Second, "the delta relayed", func() bool { return m.View().Reply == "part" })
	close(gone)
	v := wait(t, m)
	if v.Status != message.StatusFailed || v.Error == nil || v.Error.Code != "unavailable" || !strings.Contains(v.Error.Message, "left the cluster") {
		t.Errorf("after the owner went: %+v", v)
	}
	remote.Cancel()
}

// TestFollowDurable: the message of a durable agent (Owner.Next set)
// whose owner leaves mid-reply is followed to the next owner, which
// resumes it under the same id (after the relay first looked: not found
// yet) and makes its reply again from the start: the deltas relayed
// already are not repeated. When the next owner is this host, the relay
// leaves the message to the instance that resumes it here.
func TestFollowDurable(t *testing.T) {
	for _, here := range []bool{false, true} {
		name := map[bool]string{false: "next host", true: "this host"}[here]
		t.Run(name, func(t *testing.T) {
			o1, o2 := newOwner(t), newOwner(t)
			gone := make(chan struct{})
			asked := make(chan struct{}, 1)
			next := func(context.Context) (forward.Owner, bool, error) {
				asked <- struct{}{}
				return forward.Owner{Name: "o2", URL: o2.url}, here, nil
			}
			r := newReceiver(t, forward.Owner{Name: "o1", URL: o1.url, Gone: gone, Next: next}, token)
			m, _, err := r.Send(t.Context(), message.Request{Agent: "hold", Sender: "api", Content: "x"})
			if err != nil {
				t.Fatal(err)
			}
			remote := testenv.Recv(t, o1.agents.held, 10*time.Second, "the first owner's message")
			testenv.Eventually(t, 10*time.Second, "the delta relayed", func() bool { return m.View().Reply == "part" })
			close(gone) // o1 died with its message
			defer remote.Cancel()
			testenv.Recv(t, asked, 10*time.Second, "the relay to ask for the next owner")
			var again *message.Message
			if here {
				// This host's instance resumes the message: kept, with its
				// reply so far, and answered here.
				var fresh bool
				again, fresh, err = r.Resume(message.Request{ID: m.ID(), Agent: "hold", Sender: "api", Content: "x"}, trace.SpanContext{})
				if err != nil || fresh || again != m {
					t.Fatalf("resumed here: %v fresh %v, same message %v", err, fresh, again == m)
				}
				testenv.Recv(t, m.Resumed(), time.Second, "the message marked resumed")
				if err := m.Delta("more"); err != nil {
					t.Fatal(err)
				}
			} else {
				again, _, err = o2.router.Resume(message.Request{ID: m.ID(), Agent: "hold", Sender: "api", Content: "x"}, trace.SpanContext{})
				if err != nil {
					t.Fatal(err)
				}
				// Its replay makes the reply so far again, then the rest.
				_ = again.Delta("part")
				_ = again.Delta("more")
			}
			_ = again.Reply("end")
			v := wait(t, m)
			if v.Status != message.StatusDone || v.Reply != "partmoreend" {
				t.Errorf("followed to the %s: %+v, want done with \"partmoreend\"", name, v)
			}
			var deltas []string
			evs, _, _ := m.After(0)
			for _, ev := range evs {
				if ev.Kind == message.KindDelta {
					deltas = append(deltas, ev.Text)
				}
			}
			if got := strings.Join(deltas, "|"); got != "part|more" {
				t.Errorf("deltas %q, want part|more", got)
			}
		})
	}
}
