package testenv

import (
	"fmt"
	"testing"
	"time"
)

// pollEvery is how often Eventually checks its condition.
const pollEvery = 5 * time.Millisecond

// Eventually polls cond until it holds, failing t (Fatalf) with what and
// the time waited once d has passed. It is the suite's one way to wait for
// a state that no event announces (a subprocess's file, a metric, a
// session's status); where an event or channel exists, wait on that.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := Poll(d, cond); err != nil {
		t.Fatalf("%v waiting for %s", err, what)
	}
}

// Poll is Eventually for code without a testing.TB (a benchmark's helper
// goroutine, a subprocess helper): nil once cond holds, an error naming
// the wait once d has passed.
func Poll(d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v", d)
		}
		time.Sleep(pollEvery)
	}
	return nil
}

// Recv waits up to d for a value on ch, failing t with what otherwise.
func Recv[T any](t testing.TB, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("timed out after %v waiting for %s", d, what)
	}
	var zero T
	return zero
}
