package gateway

import (
	"sync/atomic"

	"github.com/toolhostd/toolhostd/internal/tooling"
)

// counters are one tooling's running totals (see ToolingStats).
type counters struct {
	calls, ok, failed, cancelled, timedOut, busy atomic.Int64
	reads, listFetches, updates                  atomic.Int64
}

// count records the outcome of a finished call.
func (c *counters) count(herr *tooling.Error) {
	switch {
	case herr == nil:
		c.ok.Add(1)
	case herr.Code == tooling.CodeCancelled:
		c.cancelled.Add(1)
	case herr.Code == tooling.CodeTimeout:
		c.timedOut.Add(1)
	default:
		c.failed.Add(1)
	}
}

// ToolingStats is a snapshot of one tooling's activity in the hub, for
// metrics. Totals count since NewHub (or AddTooling); the rest are now.
type ToolingStats struct {
	Tooling string
	CallStats
	ResourceStats
}

// CallStats are a tooling's tool calls: totals, and the gate now.
type CallStats struct {
	// Calls counts accepted call-tool and call-tool-blocking calls; OK,
	// Failed (an error envelope other than timeout or cancelled),
	// Cancelled and TimedOut count finished ones; Busy counts call-tool
	// refused with busy.
	Calls, OK, Failed, Cancelled, TimedOut, Busy int64
	// Running and Queued are the calls running and waiting for a slot now.
	Running, Queued int
}

// ResourceStats are a tooling's resource subscriptions now, and the
// totals of the work they made.
type ResourceStats struct {
	// Subscriptions and ListSubscriptions are the live subscriptions of
	// every agent; MCPSubscriptions the uris subscribed on the server.
	Subscriptions, ListSubscriptions, MCPSubscriptions int
	// Reads and ListFetches count reads made for updates and list changes;
	// Updates counts update envelopes offered to inboxes (each inbox then
	// enqueues or coalesces: see inbox.Stats).
	Reads, ListFetches, Updates int64
}

// Stats returns a snapshot per served tooling, in name order.
func (h *Hub) Stats() []ToolingStats {
	h.dyn.mu.RLock()
	rts := make([]*Served, 0, len(h.names))
	for _, name := range h.names {
		rts = append(rts, h.rts[name])
	}
	h.dyn.mu.RUnlock()
	out := make([]ToolingStats, 0, len(rts))
	for _, rt := range rts {
		c := &rt.stats
		s := ToolingStats{
			Tooling: rt.name,
			CallStats: CallStats{
				Calls: c.calls.Load(), OK: c.ok.Load(), Failed: c.failed.Load(),
				Cancelled: c.cancelled.Load(), TimedOut: c.timedOut.Load(), Busy: c.busy.Load(),
			},
			ResourceStats: ResourceStats{Reads: c.reads.Load(), ListFetches: c.listFetches.Load(), Updates: c.updates.Load()},
		}
		g := rt.gate
		g.mu.Lock()
		s.Running, s.Queued = g.running, len(g.queue)-g.head
		g.mu.Unlock()
		p := rt.pump
		p.mu.Lock()
		for _, u := range p.uris {
			s.Subscriptions += len(u.subs)
			if u.active {
				s.MCPSubscriptions++
			}
		}
		s.ListSubscriptions = len(p.listSubs)
		p.mu.Unlock()
		out = append(out, s)
	}
	return out
}
