package inbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/toolhostd/toolhostd/internal/tooling"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func dur(d time.Duration) *time.Duration { return &d }

func result(n int) Event {
	return ToolResult{Result: tooling.ToolResult{Name: "t", Arguments: "{}", Value: fmt.Sprint(n)}}
}

func content(s string) Event {
	return ResourceUpdated{Content: tooling.ResourceContent{URI: "test://r", Content: s}}
}

func mustRecv(t *testing.T, q *Inbox) Envelope {
	t.Helper()
	env, ok := q.TryRecv()
	if !ok {
		t.Fatal("TryRecv: none, want an envelope")
	}
	return env
}

func mustNone(t *testing.T, q *Inbox) {
	t.Helper()
	if env, ok := q.TryRecv(); ok {
		t.Fatalf("TryRecv: got %+v, want none", env)
	}
}

func TestArrivalOrder(t *testing.T) {
	q := New(8)
	for _, id := range []string{"a", "b", "c"} {
		if err := q.Reserve(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.OpenStream("s"); err != nil {
		t.Fatal(err)
	}
	// Results arrive in another order than the calls were made.
	q.Deliver("c", result(3))
	q.Update("s", content("x"))
	q.Deliver("a", result(1))
	q.Deliver("b", result(2))
	for _, want := range []string{"c", "s", "a", "b"} {
		if got := mustRecv(t, q).ID; got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	mustNone(t, q)
}

// TestRecvTimeout runs in a synctest bubble: the waits are on its fake
// clock, so Recv must return after exactly the time each case says.
func TestRecvTimeout(t *testing.T) {
	tests := []struct {
		name    string
		timeout *time.Duration
		put     time.Duration // deliver after this delay; <0: never
		wantOK  bool
		waits   time.Duration
	}{
		{"zero timeout empty", dur(0), -1, false, 0},
		{"timeout expires", dur(30 * time.Millisecond), -1, false, 30 * time.Millisecond},
		{"arrives within timeout", dur(5 * time.Second), 10 * time.Millisecond, true, 10 * time.Millisecond},
		{"no timeout waits", nil, 20 * time.Millisecond, true, 20 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := New(4)
				if err := q.Reserve("a"); err != nil {
					t.Fatal(err)
				}
				if tt.put >= 0 {
					go func() {
						time.Sleep(tt.put)
						q.Deliver("a", result(1))
					}()
				}
				start := time.Now()
				env, ok := q.Recv(context.Background(), tt.timeout)
				waited := time.Since(start)
				if ok != tt.wantOK {
					t.Fatalf("Recv ok = %v, want %v", ok, tt.wantOK)
				}
				if ok && env.ID != "a" {
					t.Fatalf("got id %q", env.ID)
				}
				if waited != tt.waits {
					t.Fatalf("Recv returned after %v, want %v", waited, tt.waits)
				}
			})
		})
	}
}

func TestRecvContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(4)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		start := time.Now()
		if _, ok := q.Recv(ctx, nil); ok {
			t.Fatal("Recv on an empty inbox returned an envelope")
		}
		if d := time.Since(start); d != 10*time.Millisecond {
			t.Fatalf("Recv returned after %v, want when its context ended (10ms)", d)
		}
	})
}

func TestTryRecvAndPending(t *testing.T) {
	q := New(4)
	mustNone(t, q)
	if q.Pending() != 0 {
		t.Fatal("pending on empty inbox")
	}
	q.Reserve("a")
	q.Reserve("b")
	if q.Pending() != 0 {
		t.Fatalf("pending = %d with only reservations, want 0", q.Pending())
	}
	q.Deliver("a", result(1))
	q.Deliver("b", result(2))
	if q.Pending() != 2 {
		t.Fatalf("pending = %d, want 2", q.Pending())
	}
	mustRecv(t, q)
	if q.Pending() != 1 {
		t.Fatalf("pending = %d, want 1", q.Pending())
	}
}

func TestBusy(t *testing.T) {
	q := New(3)
	q.OpenStream("s")
	q.Update("s", content("x")) // an undelivered envelope takes capacity
	q.Reserve("a")
	q.Reserve("b")
	if err := q.Reserve("c"); !errors.Is(err, ErrFull) {
		t.Fatalf("Reserve over capacity: %v, want ErrFull", err)
	}
	// A result fills its reserved slot: still full.
	if !q.Deliver("a", result(1)) {
		t.Fatal("Deliver to a reservation failed")
	}
	if err := q.Reserve("c"); !errors.Is(err, ErrFull) {
		t.Fatalf("Reserve: %v, want ErrFull", err)
	}
	// Stream updates are never refused; coalescing keeps them to one.
	if !q.Update("s", content("y")) {
		t.Fatal("Update refused on a full inbox")
	}
	mustRecv(t, q) // s
	if err := q.Reserve("c"); err != nil {
		t.Fatalf("Reserve after a delivery: %v", err)
	}
	if err := q.Reserve("d"); !errors.Is(err, ErrFull) {
		t.Fatalf("Reserve: %v, want ErrFull", err)
	}
	// Cancel releases a slot.
	if !q.Cancel("b") {
		t.Fatal("Cancel of a reservation returned false")
	}
	if err := q.Reserve("d"); err != nil {
		t.Fatalf("Reserve after cancel: %v", err)
	}
	if err := q.Reserve("d"); err == nil {
		t.Fatal("Reserve of a reserved id succeeded")
	}
}

func TestCoalescingInPlace(t *testing.T) {
	q := New(8)
	q.OpenStream("s")
	q.OpenStream("l")
	q.Reserve("a")
	q.Reserve("b")
	q.Update("s", content("v1"))
	q.Deliver("a", result(1))
	q.Update("l", ResourceListUpdated{Resources: []tooling.ResourceInfo{{URI: "x"}}})
	q.Update("s", content("v2"))
	q.Update("s", content("v3"))
	q.Update("l", ResourceListUpdated{Resources: []tooling.ResourceInfo{{URI: "x"}, {URI: "y"}}})
	q.Deliver("b", result(2))
	if got := q.Pending(); got != 4 {
		t.Fatalf("pending = %d, want 4", got)
	}
	env := mustRecv(t, q)
	if env.ID != "s" || env.Event.(ResourceUpdated).Content.Content != "v3" {
		t.Fatalf("first: %+v, want s with v3 in the first position", env)
	}
	if env := mustRecv(t, q); env.ID != "a" {
		t.Fatalf("second: %q", env.ID)
	}
	env = mustRecv(t, q)
	if env.ID != "l" || len(env.Event.(ResourceListUpdated).Resources) != 2 {
		t.Fatalf("third: %+v", env)
	}
	// Once delivered, a new update queues at the end.
	q.Update("s", content("v4"))
	if env := mustRecv(t, q); env.ID != "b" {
		t.Fatalf("fourth: %q", env.ID)
	}
	if env := mustRecv(t, q); env.ID != "s" || env.Event.(ResourceUpdated).Content.Content != "v4" {
		t.Fatalf("fifth: %+v", env)
	}
	if got := q.Stats().Coalesced; got != 3 {
		t.Fatalf("coalesced = %d, want 3", got)
	}
}

func TestCancelDrops(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(q *Inbox)
		id        string
		wantTrue  bool
		wantIDs   []string
		wantAfter bool // Deliver after cancel succeeds
	}{
		{"open call", func(q *Inbox) { q.Reserve("a") }, "a", true, nil, false},
		{"undelivered result", func(q *Inbox) {
			q.Reserve("a")
			q.Reserve("b")
			q.Deliver("a", result(1))
			q.Deliver("b", result(2))
		}, "a", true, []string{"b"}, false},
		{"received result", func(q *Inbox) {
			q.Reserve("a")
			q.Deliver("a", result(1))
			q.TryRecv()
		}, "a", false, nil, false},
		{"unknown id", func(q *Inbox) {}, "zz", false, nil, false},
		{"stream id is not a call", func(q *Inbox) {
			q.OpenStream("s")
			q.Update("s", content("x"))
		}, "s", false, []string{"s"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := New(8)
			tt.setup(q)
			if got := q.Cancel(tt.id); got != tt.wantTrue {
				t.Fatalf("Cancel = %v, want %v", got, tt.wantTrue)
			}
			if q.Cancel(tt.id) {
				t.Fatal("second Cancel returned true")
			}
			if q.Deliver(tt.id, result(9)) != tt.wantAfter {
				t.Fatal("Deliver after cancel was accepted")
			}
			if q.Reserved(tt.id) {
				t.Fatal("still reserved after cancel")
			}
			var got []string
			for {
				env, ok := q.TryRecv()
				if !ok {
					break
				}
				got = append(got, env.ID)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.wantIDs) {
				t.Fatalf("received %v, want %v", got, tt.wantIDs)
			}
		})
	}
}

func TestUnsubscribeDrops(t *testing.T) {
	q := New(8)
	q.OpenStream("s")
	q.OpenStream("t")
	q.Update("s", content("1"))
	q.Update("t", content("2"))
	if !q.CloseStream("s") {
		t.Fatal("CloseStream of an open stream returned false")
	}
	if q.CloseStream("s") {
		t.Fatal("second CloseStream returned true")
	}
	if q.Update("s", content("3")) {
		t.Fatal("Update after CloseStream accepted")
	}
	if q.Pending() != 1 {
		t.Fatalf("pending = %d, want 1", q.Pending())
	}
	if env := mustRecv(t, q); env.ID != "t" {
		t.Fatalf("got %q, want t", env.ID)
	}
	mustNone(t, q)
}

func TestEndStream(t *testing.T) {
	q := New(8)
	q.OpenStream("s")
	q.Update("s", content("1"))
	if !q.EndStream("s", Error{Err: tooling.Error{Code: tooling.CodeUnavailable, Message: "gone"}}) {
		t.Fatal("EndStream returned false")
	}
	if q.Update("s", content("2")) || q.EndStream("s", Error{}) || q.CloseStream("s") {
		t.Fatal("the ended stream still accepted operations")
	}
	if env := mustRecv(t, q); env.Event.(ResourceUpdated).Content.Content != "1" {
		t.Fatalf("first: %+v", env)
	}
	if env := mustRecv(t, q); env.ID != "s" || env.Event.(Error).Err.Code != tooling.CodeUnavailable {
		t.Fatalf("second: %+v", env)
	}
	mustNone(t, q)
}

func TestShutdownThenNone(t *testing.T) {
	q := New(8)
	q.Reserve("a")
	q.Reserve("b")
	q.OpenStream("s")
	q.Deliver("a", result(1))
	if !q.Shutdown() {
		t.Fatal("Shutdown returned false")
	}
	if q.Shutdown() {
		t.Fatal("second Shutdown returned true")
	}
	select {
	case <-q.Done():
	default:
		t.Fatal("Done not closed")
	}
	if err := q.Reserve("c"); !errors.Is(err, ErrShutdown) {
		t.Fatalf("Reserve after shutdown: %v", err)
	}
	if q.Deliver("b", result(2)) || q.Update("s", content("x")) {
		t.Fatal("delivery accepted after shutdown")
	}
	if env := mustRecv(t, q); env.ID != "a" {
		t.Fatalf("first: %q", env.ID)
	}
	env := mustRecv(t, q)
	if env.ID != "00000000-0000-0000-0000-000000000000" {
		t.Fatalf("second: %q, want the shutdown id", env.ID)
	}
	if _, ok := env.Event.(Shutdown); !ok {
		t.Fatalf("second event: %T", env.Event)
	}
	start := time.Now()
	if _, ok := q.Recv(context.Background(), nil); ok {
		t.Fatal("Recv after shutdown returned an envelope")
	}
	if _, ok := q.Recv(context.Background(), dur(time.Hour)); ok {
		t.Fatal("Recv after shutdown returned an envelope")
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("Recv after shutdown waited")
	}
	mustNone(t, q)
	if q.Pending() != 0 {
		t.Fatalf("pending = %d", q.Pending())
	}
}

// TestConcurrent has many producers and one consumer: every reserved call is
// delivered exactly once. Run it under -race.
func TestConcurrent(t *testing.T) {
	const producers, each = 8, 500
	q := New(producers * each)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("%d-%d", p, i)
				if err := q.Reserve(id); err != nil {
					t.Error(err)
					return
				}
				if i%7 == 0 {
					q.Cancel(id)
					continue
				}
				q.Deliver(id, result(i))
			}
		})
	}
	want := producers * (each - (each+6)/7)
	seen := make(map[string]bool)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for len(seen) < want {
		env, ok := q.Recv(ctx, nil)
		if !ok {
			t.Fatalf("Recv ended after %d of %d", len(seen), want)
		}
		if seen[env.ID] {
			t.Fatalf("%s delivered twice", env.ID)
		}
		seen[env.ID] = true
	}
	wg.Wait()
	mustNone(t, q)
}
