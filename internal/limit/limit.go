// Package limit admits the operations of one agent's grant: a cap on how
// many run at once and a token bucket (golang.org/x/time/rate) on how fast
// they start, read against an injectable clock. Tool grants (policy) and
// provider grants (provider.Limited) both use it, and name the limit that
// refused an operation with the constants below.
package limit

import (
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// The limits a refusal names: the config keys, as busy errors and the
// limit label of toolhostd_agent_limited_total carry them.
const (
	Concurrent        = "max_concurrent_calls" // Limits.MaxConcurrent
	CallsPerSecond    = "calls_per_second"     // a tool grant's rate
	RequestsPerMinute = "requests_per_minute"  // a provider grant's rate
	TokensPerHour     = "tokens_per_hour"      // a provider grant's budgets
	TokensPerDay      = "tokens_per_day"
)

// Limits are a Limiter's numbers; the zero value limits nothing.
type Limits struct {
	// MaxConcurrent is how many operations may run at once (0: no cap).
	MaxConcurrent int
	// N operations may start per Per: a bucket of N tokens (at least one)
	// refilled at N/Per. N <= 0 or Per <= 0: no rate limit.
	N   float64
	Per time.Duration
}

func (l Limits) bucket() (r rate.Limit, burst int, ok bool) {
	if l.N <= 0 || l.Per <= 0 {
		return 0, 0, false
	}
	return rate.Limit(l.N / l.Per.Seconds()), max(1, int(l.N)), true
}

// Limiter admits operations under Limits. An operation first Enters (a
// slot under the cap), then Takes a token; every successful Enter is
// paired with one Release. It is safe for concurrent use.
type Limiter struct {
	now func() time.Time

	running atomic.Int64
	max     atomic.Int64                 // 0: no cap
	bucket  atomic.Pointer[rate.Limiter] // nil: no rate limit
	limits  atomic.Pointer[Limits]       // as Set, for messages
	mu      sync.Mutex                   // serialises Set
}

// New makes a Limiter under l reading the clock now (nil: time.Now).
func New(l Limits, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	lim := &Limiter{now: now}
	lim.Set(l)
	return lim
}

// Set replaces the limits: the operations running and the tokens left in
// the bucket carry over under the new numbers (a bucket that was off
// starts full).
func (l *Limiter) Set(lim Limits) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limits.Store(&lim)
	l.max.Store(int64(max(0, lim.MaxConcurrent)))
	r, burst, ok := lim.bucket()
	if !ok {
		l.bucket.Store(nil)
		return
	}
	if b := l.bucket.Load(); b != nil {
		now := l.now()
		b.SetLimitAt(now, r)
		b.SetBurstAt(now, burst)
		return
	}
	l.bucket.Store(rate.NewLimiter(r, burst))
}

// Limits are the numbers in force (a refusal's message names them).
func (l *Limiter) Limits() Limits { return *l.limits.Load() }

// Enter takes a slot under MaxConcurrent. When none is free it takes
// nothing and returns false with how many operations are running.
func (l *Limiter) Enter() (running int64, ok bool) {
	n := l.running.Add(1)
	if m := l.max.Load(); m > 0 && n > m {
		l.running.Add(-1)
		return n - 1, false
	}
	return n, true
}

// Take takes a token from the bucket: false when it is empty (or true
// when there is no rate limit).
func (l *Limiter) Take() bool {
	b := l.bucket.Load()
	return b == nil || b.AllowN(l.now(), 1)
}

// Release gives back a slot Enter took.
func (l *Limiter) Release() { l.running.Add(-1) }

// Running is how many operations hold a slot.
func (l *Limiter) Running() int64 { return l.running.Load() }
