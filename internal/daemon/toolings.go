package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/metrics"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// Tooling session states, as control.ToolingStatus reports them.
const (
	toolingConnecting   = "connecting" // never connected yet
	toolingConnected    = "connected"
	toolingDisconnected = "disconnected" // connected before, reconnecting now
)

// toolingMonitor is what the daemon saw of its toolings' sessions (for
// ps, /readyz and READY=1), with its own lock.
type toolingMonitor struct {
	mu   sync.Mutex
	recs map[string]*toolingRec
}

// put adds or replaces the tooling called name.
func (m *toolingMonitor) put(name string, r *toolingRec) {
	m.mu.Lock()
	m.recs[name] = r
	m.mu.Unlock()
}

// remove forgets the tooling called name.
func (m *toolingMonitor) remove(name string) {
	m.mu.Lock()
	delete(m.recs, name)
	m.mu.Unlock()
}

// connectedOnce reports whether every tooling has connected at least once.
func (m *toolingMonitor) connectedOnce() bool {
	m.sample(context.Background(), false)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.recs {
		if !r.connectedOnce {
			return false
		}
	}
	return true
}

// toolingRec is one configured tooling and what the monitor learnt of it.
type toolingRec struct {
	cfg *config.Tooling
	t   tooling.Tooling

	// guarded by toolingMonitor.mu
	connectedOnce bool
	wasConnected  bool
	tools         int
}

// statuser is the part of *mcpclient.Client the status reports use.
type statuser interface{ Status() mcpclient.Status }

// status finds t's statuser, under any instrumentation.
func status(t tooling.Tooling) (statuser, bool) {
	for {
		if s, ok := t.(statuser); ok {
			return s, true
		}
		u, ok := t.(metrics.Unwrapper)
		if !ok {
			return nil, false
		}
		t = u.Unwrap()
	}
}

// run samples the toolings' sessions until ctx ends: whether each
// connected at least once, and its tool count after each (re)connection.
func (m *toolingMonitor) run(ctx context.Context) {
	t := time.NewTicker(monitorEvery)
	defer t.Stop()
	for {
		m.sample(ctx, true)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample updates connectedOnce and, with fetch (the monitor),
// fetches the tool count on each new connection (ctx bounds the
// tools/list).
func (m *toolingMonitor) sample(ctx context.Context, fetch bool) {
	m.mu.Lock()
	recs := make([]*toolingRec, 0, len(m.recs))
	for _, r := range m.recs {
		recs = append(recs, r)
	}
	m.mu.Unlock()
	for _, r := range recs {
		st, ok := status(r.t)
		if !ok {
			continue
		}
		up := st.Status().Connected
		m.mu.Lock()
		if up {
			r.connectedOnce = true
		}
		fresh := false
		if fetch {
			fresh = up && !r.wasConnected
			r.wasConnected = up
		}
		m.mu.Unlock()
		if fresh {
			lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			tools, err := r.t.ListTools(lctx)
			cancel()
			m.mu.Lock()
			if err == nil {
				r.tools = len(tools)
			} else {
				r.wasConnected = false // try again at the next sample
			}
			m.mu.Unlock()
		}
	}
}

// statuses reports every tooling, sorted by name.
func (m *toolingMonitor) statuses() []control.ToolingStatus {
	m.sample(context.Background(), false)
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]control.ToolingStatus, 0, len(m.recs))
	for _, name := range sortedKeys(m.recs) {
		r := m.recs[name]
		ts := control.ToolingStatus{
			Name:          name,
			Kind:          r.t.Kind(),
			Transport:     r.cfg.Transport,
			ConnectedOnce: r.connectedOnce,
			Tools:         r.tools,
			State:         toolingConnecting,
		}
		if s, ok := status(r.t); ok {
			st := s.Status()
			switch {
			case st.Connected:
				ts.State = toolingConnected
			case r.connectedOnce:
				ts.State = toolingDisconnected
			}
			ts.ServerName, ts.ServerVersion = st.ServerName, st.ServerVersion
			ts.InFlight, ts.Restarts, ts.LastError = st.InFlight, st.Restarts, st.LastError
			ts.Progress = st.ProgressNotifications
		}
		out = append(out, ts)
	}
	return out
}
