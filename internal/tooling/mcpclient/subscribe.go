package mcpclient

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"go.uber.org/zap"
)

// subscriptions are a Client's live resource subscriptions, kept across
// reconnects; mu serializes Subscribe, Unsubscribe and re-subscription.
type subscriptions struct {
	mu   sync.Mutex
	uris map[string]*session // by uri: the session each was made on
}

func supportsSubscribe(s *session) bool {
	return s != nil && s.init != nil && s.init.Capabilities != nil &&
		s.init.Capabilities.Resources != nil && s.init.Capabilities.Resources.Subscribe
}

// SupportsSubscribe reports whether the current session's server offers
// resources.subscribe; false while no session is up.
func (m *Client) SupportsSubscribe() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return supportsSubscribe(m.cur)
}

// Subscribe makes the MCP subscription to uri and keeps it across
// reconnects until Unsubscribe.
func (m *Client) Subscribe(ctx context.Context, uri string) error {
	m.subs.mu.Lock()
	defer m.subs.mu.Unlock()
	op := fmt.Sprintf("resources/subscribe %q", uri)
	s, err := m.acquire(ctx, op)
	if err != nil {
		return err
	}
	// The request is not cancelled with the caller: a server may complete
	// a subscribe after the caller gave up (cancellation is only advisory),
	// and nobody would ever withdraw that subscription. So the request runs
	// on its own, bounded by the call timeout and the session; if the
	// caller leaves first, a subscription that still succeeds is withdrawn.
	done := make(chan error, 1)
	if !s.spawn(func() { done <- m.subscribeOn(context.WithoutCancel(ctx), s, op, uri) }) {
		return tooling.Errorf(tooling.CodeUnavailable, "%s: the session is closing", op)
	}
	select {
	case err := <-done:
		if err != nil {
			return plainError(err)
		}
		m.subs.uris[uri] = s
		return nil
	case <-ctx.Done():
		// The caller leaves; done is buffered, so the request's goroutine
		// ends either way. If the session is closing, it is gone with it.
		s.spawn(func() { m.withdrawAbandoned(s, uri, <-done) })
		return mapError(ctx, ctx, op, ctx.Err())
	}
}

// withdrawAbandoned unsubscribes from uri on s after a subscribe whose
// caller gave up succeeded anyway, unless uri was subscribed again since.
// It never waits for m.subs.mu past the end of the session (a Subscribe
// may hold it while it waits for the next session).
func (m *Client) withdrawAbandoned(s *session, uri string, subscribeErr error) {
	if subscribeErr != nil {
		return
	}
	for !m.subs.mu.TryLock() {
		select {
		case <-s.ctx.Done():
			return // the server forgets the session's subscriptions with it
		case <-time.After(5 * time.Millisecond):
		}
	}
	defer m.subs.mu.Unlock()
	if _, live := m.subs.uris[uri]; live {
		return
	}
	err := m.run(s.ctx, s, fmt.Sprintf("resources/unsubscribe %q", uri), func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
	if err != nil {
		m.log.Debug("withdrawing an abandoned subscription failed", zap.String("uri", uri), zap.Error(err))
	}
}

func (m *Client) subscribeOn(ctx context.Context, s *session, op, uri string) error {
	if !supportsSubscribe(s) {
		return tooling.Errorf(tooling.CodeUnsupported, "%s: the server does not offer resources.subscribe", op)
	}
	return m.run(ctx, s, op, func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
}

// Unsubscribe withdraws the subscription to uri. It never waits for a
// session: with none up there is nothing to withdraw, and uri is not
// re-subscribed.
func (m *Client) Unsubscribe(ctx context.Context, uri string) error {
	m.subs.mu.Lock()
	defer m.subs.mu.Unlock()
	if _, ok := m.subs.uris[uri]; !ok {
		return nil
	}
	delete(m.subs.uris, uri)
	m.mu.Lock()
	s := m.cur
	m.mu.Unlock()
	if s == nil {
		return nil
	}
	return plainError(m.run(ctx, s, fmt.Sprintf("resources/unsubscribe %q", uri), func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	}))
}

// resubscribe makes every live subscription again on a new session.
func (m *Client) resubscribe(s *session) {
	m.subs.mu.Lock()
	defer m.subs.mu.Unlock()
	uris := make([]string, 0, len(m.subs.uris))
	for u, on := range m.subs.uris {
		// A Subscribe that ran between the session going up and this
		// re-subscription already made it on s.
		if on != s {
			uris = append(uris, u)
		}
	}
	sort.Strings(uris)
	for _, uri := range uris {
		err := plainError(m.subscribeOn(s.ctx, s, fmt.Sprintf("resources/subscribe %q", uri), uri))
		if err == nil {
			m.subs.uris[uri] = s
			continue
		}
		if s.ctx.Err() != nil {
			// The session died again: the next one tries these.
			return
		}
		m.log.Warn("re-subscription failed", zap.String("uri", uri), zap.Error(err))
		delete(m.subs.uris, uri)
		if s.obs != nil {
			s.obs.ResubscribeFailed(uri, err)
		}
	}
}
