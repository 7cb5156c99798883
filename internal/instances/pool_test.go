package instances

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// guest is a real Instance: an inbox and its mailbox, answered by a
// goroutine as a guest in recv would: it replies "session:content" to each
// message, except "hold", which it answers when released.
type guest struct {
	session string
	in      *inbox.Inbox
	mb      *message.Mailbox
	release chan struct{}
	done    chan struct{}
	order   *[]string
	mu      *sync.Mutex
}

func (g *guest) Mailbox() *message.Mailbox { return g.mb }
func (g *guest) Busy() bool {
	st := g.in.Stats()
	return g.mb.Open() > 0 || st.Open > 0 || st.Pending > 0
}
func (g *guest) Stop()                 { g.in.Shutdown() }
func (g *guest) Done() <-chan struct{} { return g.done }

func (g *guest) run() {
	defer close(g.done)
	defer g.mb.Close(tooling.CodeUnavailable, "instance ended")
	for {
		env, ok := g.in.Recv(context.Background(), nil)
		if !ok {
			return
		}
		msg, ok := env.Event.(inbox.Message)
		if !ok {
			continue
		}
		g.mu.Lock()
		*g.order = append(*g.order, g.session+":"+msg.Content)
		g.mu.Unlock()
		if msg.Content == "hold" {
			select {
			case <-g.release:
			case <-g.in.Done():
				return
			}
		}
		_ = g.mb.Reply(env.ID, g.session+":"+msg.Content)
	}
}

type world struct {
	t       *testing.T
	router  *message.Router
	pool    *Pool
	mu      sync.Mutex
	order   []string
	starts  int
	release chan struct{}
	cancel  context.CancelFunc
	served  chan error
}

func (w *world) Target(string) (message.Target, error) {
	return message.Target{Accepts: []string{"api"}}, nil
}

func (w *world) Deliver(ctx context.Context, m *message.Message) error { return w.pool.Deliver(ctx, m) }

func newWorld(t *testing.T, idle time.Duration, max int) *world {
	w := &world{t: t, release: make(chan struct{})}
	w.pool = New(Options{Agent: "a", IdleTimeout: idle, MaxInstances: max, Start: func(_ context.Context, session, _ string) (Instance, error) {
		w.mu.Lock()
		w.starts++
		w.mu.Unlock()
		in := inbox.New(8)
		g := &guest{session: session, in: in, mb: message.NewMailbox(in, nil), release: w.release, done: make(chan struct{}), order: &w.order, mu: &w.mu}
		go g.run()
		return g, nil
	}})
	w.router = message.NewRouter(w, message.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.served = cancel, make(chan error, 1)
	go func() { w.served <- w.pool.Serve(ctx) }()
	return w
}

func (w *world) stop() {
	w.cancel()
	<-w.served
}

func (w *world) send(session, content string) (*message.Message, error) {
	m, _, err := w.router.Send(context.Background(), message.Request{Agent: "a", Session: session, Sender: "api", Content: content})
	return m, err
}

func reply(t *testing.T, m *message.Message) string {
	t.Helper()
	<-m.Done()
	v := m.View()
	if v.Error != nil {
		t.Fatalf("message failed: %+v", v.Error)
	}
	return v.Reply
}

func TestSessionsAndOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, time.Minute, 10)
		defer w.stop()
		var ms []*message.Message
		for _, c := range []string{"1", "2", "3"} {
			for _, s := range []string{"x", "y"} {
				m, err := w.send(s, c)
				if err != nil {
					t.Fatal(err)
				}
				ms = append(ms, m)
			}
		}
		for _, m := range ms {
			if got, want := reply(t, m), m.Session()+":"+m.Content(); got != want {
				t.Fatalf("reply %q, want %q: went to the wrong instance", got, want)
			}
		}
		if w.starts != 2 {
			t.Fatalf("%d instances started for 2 sessions", w.starts)
		}
		var x []string
		for _, o := range w.order {
			if o[0] == 'x' {
				x = append(x, o)
			}
		}
		if len(x) != 3 || x[0] != "x:1" || x[1] != "x:2" || x[2] != "x:3" {
			t.Fatalf("session x received %v, want in order", x)
		}
		// A one-off message gets its own instance, stopped once idle.
		m, _ := w.send("", "once")
		if got := reply(t, m); got != ":once" {
			t.Fatalf("one-off reply %q", got)
		}
		if w.starts != 3 {
			t.Fatalf("starts %d, want a fresh instance for the one-off", w.starts)
		}
		time.Sleep(2 * w.pool.tick) // the reaper's next ticks, in the bubble's fake time
		synctest.Wait()
		if c := w.pool.Counts(); c.Live != 2 || c.StoppedIdle != 1 {
			t.Fatalf("counts %+v: the one-off instance should be stopped, the sessions kept", c)
		}
	})
}

func TestIdleStopKeepsWorkInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, time.Minute, 10)
		defer w.stop()
		held, _ := w.send("busy", "hold")
		quiet, _ := w.send("quiet", "hi")
		reply(t, quiet)
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		sessions := map[string]string{}
		for _, st := range w.pool.List() {
			sessions[st.Session] = st.State
		}
		if _, ok := sessions["quiet"]; ok {
			t.Fatalf("the idle instance was not stopped: %v", sessions)
		}
		if sessions["busy"] != StateRunning {
			t.Fatalf("the instance with a message in flight was reaped: %v", sessions)
		}
		close(w.release)
		if got := reply(t, held); got != "busy:hold" {
			t.Fatalf("held reply %q", got)
		}
		// Idle from its reply on: stopped a timeout later, not before.
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if w.pool.Counts().Live != 1 {
			t.Fatal("stopped before its idle timeout")
		}
		time.Sleep(31 * time.Second)
		synctest.Wait()
		if c := w.pool.Counts(); c.Live != 0 || c.StoppedIdle != 2 {
			t.Fatalf("counts %+v", c)
		}
		// A later message of the session starts it again.
		m, _ := w.send("quiet", "again")
		if got := reply(t, m); got != "quiet:again" {
			t.Fatalf("reply %q", got)
		}
	})
}

func TestMaxInstances(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, time.Hour, 2)
		defer w.stop()
		defer close(w.release)
		a, _ := w.send("a", "hold")
		b, _ := w.send("b", "hi")
		reply(t, b)
		time.Sleep(time.Second)
		// Full: the longest-idle instance (b) makes room for c.
		c, err := w.send("c", "hold")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		live := map[string]bool{}
		for _, st := range w.pool.List() {
			if st.State == StateRunning {
				live[st.Session] = true
			}
		}
		if !live["a"] || !live["c"] || live["b"] {
			t.Fatalf("live %v: want a and c, b stopped for room", live)
		}
		// Both working: a new session is refused, busy.
		if _, err := w.send("d", "hi"); !errors.Is(err, message.ErrBusy) {
			t.Fatalf("all working: %v", err)
		}
		_ = a
		_ = c
	})
}

func TestServeEndStopsAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, time.Hour, 10)
		held, _ := w.send("s", "hold")
		w.stop()
		<-held.Done()
		if v := held.View(); v.Error == nil || v.Error.Code != "unavailable" {
			t.Fatalf("a message open when its instance stopped: %+v", v)
		}
		if _, err := w.send("s", "late"); !errors.Is(err, message.ErrUnavailable) {
			t.Fatalf("after Serve: %v", err)
		}
	})
}

// TestInstanceEndingAtStart: an instance that ends as soon as it starts
// fails the message (unavailable) instead of starting instances in a loop.
func TestInstanceEndingAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		starts := 0
		pool := New(Options{Agent: "a", IdleTimeout: time.Minute, MaxInstances: 4, Start: func(context.Context, string, string) (Instance, error) {
			starts++
			in := inbox.New(4)
			g := &guest{in: in, mb: message.NewMailbox(in, nil), done: make(chan struct{})}
			g.mb.Close(tooling.CodeUnavailable, "it ended at start")
			in.Shutdown()
			close(g.done)
			return g, nil
		}})
		w := &world{t: t, pool: pool}
		w.router = message.NewRouter(w, message.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- pool.Serve(ctx) }()
		for range 2 {
			if _, err := w.send("s", "hi"); !errors.Is(err, message.ErrUnavailable) {
				t.Fatalf("send to an instance that ends at start: %v", err)
			}
		}
		if starts > 3 {
			t.Fatalf("%d starts for two messages", starts)
		}
		cancel()
		<-served
	})
}
