package limit

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// step is one operation on a Limiter and what it must return.
type step struct {
	op   string        // enter, take, release, wait, set
	want bool          // enter, take: admitted
	n    int64         // enter refused: the running count it reports
	d    time.Duration // wait
	set  Limits        // set
}

func TestLimiter(t *testing.T) {
	cases := []struct {
		name   string
		limits Limits
		steps  []step
	}{
		{"zero limits nothing", Limits{}, []step{
			{op: "enter", want: true}, {op: "enter", want: true}, {op: "enter", want: true},
			{op: "take", want: true}, {op: "take", want: true}, {op: "take", want: true},
		}},
		{"cap", Limits{MaxConcurrent: 2}, []step{
			{op: "enter", want: true}, {op: "enter", want: true},
			{op: "enter", want: false, n: 2},
			{op: "release"},
			{op: "enter", want: true},
			{op: "enter", want: false, n: 2},
		}},
		{"per second: burst of N, refilled at N a second", Limits{N: 3, Per: time.Second}, []step{
			{op: "take", want: true}, {op: "take", want: true}, {op: "take", want: true},
			{op: "take", want: false},
			{op: "wait", d: 300 * time.Millisecond}, // 0.9 of a token
			{op: "take", want: false},
			{op: "wait", d: 40 * time.Millisecond},
			{op: "take", want: true},
			{op: "take", want: false},
		}},
		{"per minute: a token every 60/N seconds", Limits{N: 2, Per: time.Minute}, []step{
			{op: "take", want: true}, {op: "take", want: true}, {op: "take", want: false},
			{op: "wait", d: 29 * time.Second}, {op: "take", want: false},
			{op: "wait", d: time.Second}, {op: "take", want: true}, {op: "take", want: false},
		}},
		{"a rate under one holds one token", Limits{N: 0.5, Per: time.Second}, []step{
			{op: "take", want: true}, {op: "take", want: false},
			{op: "wait", d: 2 * time.Second}, {op: "take", want: true},
		}},
		{"set keeps the running operations", Limits{MaxConcurrent: 2}, []step{
			{op: "enter", want: true}, {op: "enter", want: true},
			{op: "set", set: Limits{MaxConcurrent: 3}},
			{op: "enter", want: true},
			{op: "enter", want: false, n: 3},
			{op: "set", set: Limits{MaxConcurrent: 1}},
			{op: "release"}, {op: "release"},
			{op: "enter", want: false, n: 1},
			{op: "set", set: Limits{}},
			{op: "enter", want: true},
		}},
		{"set keeps the bucket's tokens", Limits{N: 2, Per: time.Second}, []step{
			{op: "take", want: true}, {op: "take", want: true},
			{op: "set", set: Limits{N: 10, Per: time.Second}},
			{op: "take", want: false}, // still empty: a raise does not refill
			{op: "wait", d: 100 * time.Millisecond},
			{op: "take", want: true},
			{op: "set", set: Limits{}}, // off: no limit
			{op: "take", want: true}, {op: "take", want: true},
			{op: "set", set: Limits{N: 1, Per: time.Second}}, // on again: a full bucket
			{op: "take", want: true}, {op: "take", want: false},
		}},
		{"cap and rate are independent", Limits{MaxConcurrent: 1, N: 1, Per: time.Hour}, []step{
			{op: "enter", want: true}, {op: "take", want: true},
			{op: "enter", want: false, n: 1},
			{op: "release"},
			{op: "enter", want: true}, {op: "take", want: false},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
			l := New(tc.limits, func() time.Time { return now })
			for i, s := range tc.steps {
				switch s.op {
				case "enter":
					n, ok := l.Enter()
					if ok != s.want || (!ok && n != s.n) {
						t.Fatalf("step %d: Enter = %d, %v; want %v (running %d)", i, n, ok, s.want, s.n)
					}
				case "take":
					if got := l.Take(); got != s.want {
						t.Fatalf("step %d: Take = %v, want %v", i, got, s.want)
					}
				case "release":
					l.Release()
				case "wait":
					now = now.Add(s.d)
				case "set":
					l.Set(s.set)
				}
			}
		})
	}
}

// TestLimiterWallClock: without an injected clock the bucket refills on
// time.Now, here the bubble's fake time.
func TestLimiterWallClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Limits{N: 1, Per: time.Second}, nil)
		if !l.Take() || l.Take() {
			t.Fatal("a bucket of one token")
		}
		time.Sleep(time.Second)
		if !l.Take() {
			t.Fatal("no token after a second")
		}
	})
}

// TestLimiterConcurrent: goroutines racing for slots never hold more than
// the cap, and every slot comes back.
func TestLimiterConcurrent(t *testing.T) {
	const limit, workers, rounds = 3, 8, 200
	l := New(Limits{MaxConcurrent: limit}, nil)
	var admitted atomic.Int64 // Running also counts an Enter about to be refused
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range rounds {
				if _, ok := l.Enter(); ok {
					if n := admitted.Add(1); n > limit {
						t.Errorf("%d admitted under a cap of %d", n, limit)
					}
					admitted.Add(-1)
					l.Release()
				}
			}
		})
	}
	wg.Wait()
	if n := l.Running(); n != 0 {
		t.Errorf("%d still running", n)
	}
}
