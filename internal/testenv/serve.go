package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/tooling"
)

// stopWithin bounds how long Serve's cleanup waits for run to return.
const stopWithin = 30 * time.Second

// Serve runs run (a Serve or Run method) on its own goroutine until the
// test ends; the cleanup cancels its context and fails t unless it returns
// within 30s. What run returns is not checked: a test that cares runs it
// itself.
func Serve(t testing.TB, what string, run func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(stopWithin):
			t.Errorf("%s did not return within %v of its context's end", what, stopWithin)
		}
	})
}

// ServeTooling serves tl (Serve above), the notifications of its sessions
// going to o (nil: nowhere).
func ServeTooling(t testing.TB, tl tooling.Tooling, o tooling.Observer) {
	t.Helper()
	Serve(t, "Serve", func(ctx context.Context) error { return tl.Serve(ctx, o) })
}
