package mcpclient

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"go.uber.org/zap"
)

// Progress: every tools/call carries a progress token of its own; the
// server's notifications/progress for it are logged at debug with the
// call's id, counted (Status.ProgressNotifications, every one received), and handed to the
// function WithProgress put in the call's context. The guest contract has
// no progress event: agents do not see them.

// progressCall is a call that may get progress notifications: in flight,
// or ended less than progressGrace ago.
type progressCall struct {
	callID, tool string
	report       func(tooling.Progress)
	ended        time.Time // zero while the call is in flight
}

// progressGrace is how long a call's token stays known after the call
// returned: go-sdk hands notifications to their handler apart from
// responses, so the last progress a server sent before its result may be
// handled just after the call returned.
const progressGrace = 2 * time.Second

// progressTracker knows the progress tokens of a Client's calls: every
// tools/call gets one of its own; mu guards the calls by token, the sweep
// time and each call's end.
type progressTracker struct {
	seq   atomic.Uint64 // the last token handed out
	count atomic.Uint64 // notifications received (Status.ProgressNotifications)
	mu    sync.Mutex
	calls map[string]*progressCall // by token
	swept time.Time                // the last sweep of ended calls
}

// track registers a call's progress token; untrack it when the call ends.
// Ended calls are forgotten by a sweep that runs at most once per
// progressGrace, from track itself: no timer per call.
func (p *progressTracker) track(ctx context.Context, tool string) (token string, untrack func()) {
	pc := &progressCall{tool: tool}
	pc.callID = tooling.CallIDOf(ctx)
	pc.report = tooling.ProgressOf(ctx)
	token = "toolhostd-" + strconv.FormatUint(p.seq.Add(1), 10)
	now := time.Now()
	p.mu.Lock()
	if p.calls == nil {
		p.calls = make(map[string]*progressCall)
	}
	if now.Sub(p.swept) >= progressGrace {
		for t, c := range p.calls {
			if !c.ended.IsZero() && now.Sub(c.ended) >= progressGrace {
				delete(p.calls, t)
			}
		}
		p.swept = now
	}
	p.calls[token] = pc
	p.mu.Unlock()
	return token, func() {
		p.mu.Lock()
		pc.ended = time.Now()
		p.mu.Unlock()
	}
}

// received counts a notification for token and returns its call; nil when
// no call has it (or had it within progressGrace).
func (p *progressTracker) received(token string) *progressCall {
	p.mu.Lock()
	pc := p.calls[token]
	p.mu.Unlock()
	p.count.Add(1)
	return pc
}

func (m *Client) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req.Params == nil {
		return
	}
	p := req.Params
	token := fmt.Sprint(p.ProgressToken)
	pc := m.progress.received(token)
	if pc == nil {
		m.log.Debug("progress for no call in flight", zap.String("progress_token", token),
			zap.Float64("progress", p.Progress), zap.Float64("total", p.Total), zap.String("message", p.Message))
		return
	}
	m.log.Debug("progress", zap.String("call_id", pc.callID), zap.String("tool", pc.tool),
		zap.Float64("progress", p.Progress), zap.Float64("total", p.Total), zap.String("message", p.Message))
	if pc.report != nil {
		pc.report(tooling.Progress{CallID: pc.callID, Tool: pc.tool, Progress: p.Progress, Total: p.Total, Message: p.Message})
	}
}
