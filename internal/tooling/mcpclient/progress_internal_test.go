package mcpclient

import (
	"context"
	"testing"
	"time"
)

// TestProgressSweep: an ended call's token stays known for progressGrace
// (a late notification still finds its call), then the next call's
// registration forgets it; calls in flight are never forgotten.
func TestProgressSweep(t *testing.T) {
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

	// Age the ended call (and the last sweep) past the grace.
	m.progressMu.Lock()
	m.progress[ended].ended = time.Now().Add(-progressGrace)
	m.progressSwept = time.Now().Add(-progressGrace)
	m.progressMu.Unlock()
	later, _ := m.trackProgress(ctx, "c")
	if _, ok := m.progress[ended]; ok {
		t.Error("a call ended longer than progressGrace ago is still known")
	}
	if m.progress[inFlight] == nil || m.progress[later] == nil {
		t.Error("the sweep forgot a call in flight")
	}
	if len(m.progress) != 2 {
		t.Errorf("%d calls known, want 2", len(m.progress))
	}
}
