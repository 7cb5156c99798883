package pump

import (
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// FanoutForBench fans rc out to the subscribers of its uri on the tooling
// called name, as the resource pump does after a read.
func FanoutForBench(h *Hub, name string, rc tooling.ResourceContent) int {
	rt, _ := h.lookup(name)
	p := rt.pump
	p.mu.Lock()
	u := p.uris[rc.URI]
	p.mu.Unlock()
	if u == nil {
		return 0
	}
	return p.fanout(u, inbox.ResourceUpdated{Content: rc})
}
