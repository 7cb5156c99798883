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
		m := &Client{}
		ctx := context.Background()
		ended, untrack := m.trackProgress(ctx, "a")
		untrack()
		inFlight, _ := m.trackProgress(ctx, "b")
		if m.progress[ended] == nil {
			t.Fatal("a call that just ended was forgotten within progressGrace")
		}
		if m.progress[ended].ended.IsZero() || !m.progress[inFlight].ended.IsZero() {
			t.Fatal("untrack did not mark the ended call, or marked the one in flight")
		}

		time.Sleep(progressGrace - time.Millisecond)
		almost, untrackAlmost := m.trackProgress(ctx, "c")
		if m.progress[ended] == nil {
			t.Fatal("a call that ended just under progressGrace ago was forgotten")
		}
		untrackAlmost()

		time.Sleep(time.Millisecond)
		later, _ := m.trackProgress(ctx, "d")
		if _, ok := m.progress[ended]; ok {
			t.Error("a call ended progressGrace ago is still known")
		}
		if m.progress[inFlight] == nil || m.progress[later] == nil || m.progress[almost] == nil {
			t.Error("the sweep forgot a call in flight or one ended within the grace")
		}
		if len(m.progress) != 3 {
			t.Errorf("%d calls known, want 3", len(m.progress))
		}
	})
}
