package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/thejerf/suture/v4"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth"
	"github.com/toolhostd/toolhostd/internal/tooling/transport"
	"go.uber.org/zap"
)

var errConnectTimeout = errors.New("connect timeout")

// Serve keeps a session up until ctx ends: connect (bounded by the connect
// timeout), watch it (liveness pings), and after it ends reconnect with
// exponential backoff and jitter, re-subscribing every live subscription.
// The notifications of its sessions go to o (nil: nowhere). It returns
// suture.ErrDoNotRestart for a config it can never run.
func (m *Client) Serve(ctx context.Context, o tooling.Observer) error {
	if m.opts.dial == nil {
		if err := checkConfig(m.cfg); err != nil {
			m.connectFailed(err)
			m.log.Error("tooling cannot run", zap.Error(err))
			return fmt.Errorf("tooling %s: %w (%w)", m.name, err, suture.ErrDoNotRestart)
		}
	}
	backoff := m.opts.restart.initial
	for {
		tokens := m.tokenVersion()
		healthy, err := m.runSession(ctx, o)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if le := oauth.AsLoginRequired(err); le != nil {
			m.log.Warn("session needs authorization; waiting for a login", zap.Error(le))
			if err := m.waitForLogin(ctx, tokens); err != nil {
				return err
			}
			backoff = m.opts.restart.initial
			continue
		}
		if healthy >= m.opts.restart.healthyAfter {
			backoff = m.opts.restart.initial
		}
		// Jitter: a delay in [backoff/2, backoff).
		delay := backoff/2 + rand.N(backoff/2+1)
		m.log.Warn("session down; reconnecting", zap.Error(m.redact(err)), zap.Duration("backoff", delay))
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(backoff*2, m.opts.restart.max)
		m.mu.Lock()
		m.restarts++
		m.mu.Unlock()
	}
}

// endSession takes s out of service at once (operations then wait for the
// next session) and cancels its context, failing its in-flight requests.
func (m *Client) endSession(s *session, cause error) {
	cause = m.redact(cause)
	m.mu.Lock()
	if m.cur == s {
		m.cur = nil
		m.ready = make(chan struct{})
		m.setLastErrLocked(cause)
		m.tools.invalidate()
	}
	m.mu.Unlock()
	s.cancel(&sessionLostError{cause})
}

// connectFailed records a failed connection attempt: until a session is
// up, operations fail at once with err instead of waiting for one.
func (m *Client) connectFailed(err error) {
	err = m.redact(err)
	m.mu.Lock()
	m.setLastErrLocked(err)
	m.down = true
	close(m.failed)
	m.failed = make(chan struct{})
	m.mu.Unlock()
}

// runSession connects once and returns when that session has ended, with
// how long it was up and why it ended; its notifications go to o.
func (m *Client) runSession(ctx context.Context, o tooling.Observer) (time.Duration, error) {
	track := transport.NewTracker(m.opts.dial == nil)
	defer track.AbortWrites()
	d, err := m.prepare(ctx, track)
	if err != nil {
		m.connectFailed(err)
		return 0, err
	}
	if d.cleanup != nil {
		defer d.cleanup()
	}
	// The context given to Connect must outlive the handshake: go-sdk's SSE
	// transport ties its event stream to it. It must outlive ctx too, so
	// that a tooling being stopped can still send what it owes (the
	// notices of cancelled calls) before closing: ctx and the connect
	// timeout cancel it only while Connect runs; afterwards it ends with
	// the session.
	life, endLife := context.WithCancelCause(context.WithoutCancel(ctx))
	defer endLife(nil)
	cs, err := m.connect(ctx, life, endLife, d)
	if err != nil {
		return 0, err
	}
	m.reqs.trackers.Store(cs, track)
	defer m.reqs.trackers.Delete(cs)
	sctx, scancel := context.WithCancelCause(context.Background())
	s := &session{cs: cs, init: cs.InitializeResult(), ctx: sctx, cancel: scancel, refresh: make(chan struct{}, 1), track: track, obs: o}
	start := time.Now()
	stopOnCancel := context.AfterFunc(ctx, func() { m.endSession(s, errors.New("tooling stopped")) })
	defer stopOnCancel()
	m.publish(s)

	var wg sync.WaitGroup
	m.watch(&wg, s)
	m.resubscribe(s)

	<-s.ctx.Done()
	cause := context.Cause(s.ctx)
	m.endSession(s, cause) // no-op unless cancelled directly
	m.shut(ctx, s, d)
	wg.Wait()
	s.closeBackground()
	return time.Since(start), cause
}

// prepare makes the transport of one connection attempt: the Dialer's, or
// the config's.
func (m *Client) prepare(ctx context.Context, track *transport.Tracker) (*dialed, error) {
	if m.opts.dial != nil {
		t, err := m.opts.dial(ctx)
		if err != nil {
			return nil, fmt.Errorf("dialing: %w", err)
		}
		return &dialed{transport: t}, nil
	}
	d, err := m.dial(track)
	if err != nil {
		return nil, fmt.Errorf("preparing the transport: %w", err)
	}
	return d, nil
}

// connect makes the MCP session over d within the connect timeout, on
// life (which ctx and the timeout end through endLife while Connect runs).
// A failure is recorded (connectFailed, or the login it needs) before it
// is returned, and what d started is killed.
func (m *Client) connect(ctx, life context.Context, endLife context.CancelCauseFunc, d *dialed) (*mcp.ClientSession, error) {
	timer := time.AfterFunc(m.opts.timeout.connect, func() { endLife(errConnectTimeout) })
	unlink := context.AfterFunc(ctx, func() { endLife(context.Cause(ctx)) })
	m.oauthWanted.Store(false)
	cs, err := m.client.Connect(life, d.transport, &mcp.ClientSessionOptions{ProtocolVersion: m.opts.protocol})
	timedOut, stopped := !timer.Stop(), !unlink()
	if (timedOut || stopped) && err == nil {
		_ = cs.Close()
		err = context.Cause(life)
	}
	if err == nil {
		return cs, nil
	}
	if le := oauth.AsLoginRequired(err); le != nil {
		m.setLastErr(le)
		return nil, le
	}
	if errors.Is(context.Cause(life), errConnectTimeout) {
		err = fmt.Errorf("connecting: no session within %v: %w", m.opts.timeout.connect, err)
	} else {
		err = fmt.Errorf("connecting: %w", err)
	}
	if m.oauthWanted.Load() {
		err = fmt.Errorf("%w (the server asks for an OAuth token: add oauth = {} to [tooling.%s], then run toolhostd auth login %s)", err, m.name, m.name)
	}
	err = transport.Hint(err, m.cfg.Transport, d.status)
	if d.kill != nil {
		d.kill() // what the server started must not outlive the attempt
	}
	m.connectFailed(err)
	return nil, err
}

// publish puts the new session s in service and logs it.
func (m *Client) publish(s *session) {
	m.mu.Lock()
	m.cur = s
	m.down = false
	close(m.ready)
	m.tools.invalidate()
	m.mu.Unlock()
	fields := []zap.Field{}
	if s.init != nil && s.init.ServerInfo != nil {
		fields = append(fields, zap.String("server", s.init.ServerInfo.Name), zap.String("server_version", s.init.ServerInfo.Version))
	}
	if s.init != nil {
		fields = append(fields, zap.String("protocol", s.init.ProtocolVersion))
	}
	m.log.Info("session up", fields...)
	m.setLogLevel(s)
}

// watch starts, in wg, the goroutines of the live session s: the end of
// its connection, the liveness pings and the refreshes of the tool list.
// Each returns when s ends.
func (m *Client) watch(wg *sync.WaitGroup, s *session) {
	wg.Go(func() {
		err := s.cs.Wait()
		if err == nil {
			err = errors.New("connection closed")
		}
		m.endSession(s, err)
	})
	wg.Go(func() { m.liveness(s) })
	wg.Go(func() {
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-s.refresh:
				if _, err := m.fetchTools(s.ctx, s); err != nil {
					m.log.Debug("refreshing the tool list failed", zap.Error(err))
				}
			}
		}
	})
}

// shut closes the ended session s over d. ctx is the tooling's: while it
// lives the server is dead or unresponsive and is killed at once; once it
// has ended, the owed cancellation notices get a grace period first.
func (m *Client) shut(ctx context.Context, s *session, d *dialed) {
	if ctx.Err() == nil && d.kill != nil {
		// Dead or unresponsive: do not wait for it to exit by itself.
		d.kill()
	}
	if ctx.Err() != nil {
		// The tooling stops (a one-shot command ends, a Ctrl-C): let the
		// notifications/cancelled of the requests that cancelled go out
		// before the close, which would refuse them.
		if !s.track.Drain(transport.CloseGrace) {
			sending, pending := s.track.Counts()
			m.log.Debug("closing without waiting longer for cancellation notices", zap.Int("in_flight", sending), zap.Int("notices_owed", pending))
		}
	}
	// Closing never waits on a request it cancelled: writes still blocked
	// (a notice the server never answers) are given up.
	s.track.AbortWrites()
	_ = s.cs.Close()
	if d.kill != nil {
		// After a graceful close too: what the server started itself (npx
		// → node, a shell's children) shares its process group and must
		// not outlive the session.
		d.kill()
	}
}

// liveness pings the server; a ping unanswered within the timeout tears
// the session down (go-sdk's own keepalive closes the session but leaves
// in-flight calls waiting on a hung peer), unless other requests were
// answered meanwhile: a server busy with them is not hung.
func (m *Client) liveness(s *session) {
	if m.opts.pingInterval <= 0 {
		return
	}
	t := time.NewTicker(m.opts.pingInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		sent := time.Now()
		pctx, cancel := context.WithTimeout(s.ctx, m.opts.pingTimeout)
		err := s.cs.Ping(pctx, nil)
		cancel()
		if err == nil || s.ctx.Err() != nil {
			continue
		}
		if s.track.AnsweredSince(sent) {
			m.log.Debug("ping unanswered, but other requests were: busy, not hung", zap.Error(err))
			continue
		}
		var we *jsonrpc.Error
		if errors.As(err, &we) && we.Code == jsonrpc.CodeMethodNotFound {
			continue // it answered: alive, just without ping
		}
		m.endSession(s, fmt.Errorf("liveness check failed: %w", err))
		return
	}
}

// setLastErr records err outside a connection attempt; nil (new tokens
// were stored) clears the failure, so operations wait for the next
// session again instead of failing at once.
func (m *Client) setLastErr(err error) {
	err = m.redact(err)
	m.mu.Lock()
	m.setLastErrLocked(err)
	if err == nil {
		m.down = false
	}
	m.mu.Unlock()
}
