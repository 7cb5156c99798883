package mcpclient

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestProgressSweep: an ended call's token stays known for progressGrace
// (a late notification still finds its call), then the next call's
// registration forgets it; calls in flight are never forgotten. It runs in
// a synctest bubble: the grace passes on its fake clock.
func TestProgressSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &progressTracker{}
		ctx := context.Background()
		ended, untrack := p.track(ctx, "a")
		untrack()
		inFlight, _ := p.track(ctx, "b")
		if p.calls[ended] == nil {
			t.Fatal("a call that just ended was forgotten within progressGrace")
		}
		if p.calls[ended].ended.IsZero() || !p.calls[inFlight].ended.IsZero() {
			t.Fatal("untrack did not mark the ended call, or marked the one in flight")
		}

		time.Sleep(progressGrace - time.Millisecond)
		almost, untrackAlmost := p.track(ctx, "c")
		if p.calls[ended] == nil {
			t.Fatal("a call that ended just under progressGrace ago was forgotten")
		}
		untrackAlmost()

		time.Sleep(time.Millisecond)
		later, _ := p.track(ctx, "d")
		if _, ok := p.calls[ended]; ok {
			t.Error("a call ended progressGrace ago is still known")
		}
		if p.calls[inFlight] == nil || p.calls[later] == nil || p.calls[almost] == nil {
			t.Error("the sweep forgot a call in flight or one ended within the grace")
		}
		if len(p.calls) != 3 {
			t.Errorf("%d calls known, want 3", len(p.calls))
		}
	})
}
