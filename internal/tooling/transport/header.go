package transport

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhostd/toolhostd/internal/tracing"
)

// Header sets the configured headers on every request, and
// reports the notifications/cancelled it posts to track. Once track aborts
// (the session is closing), every request still under way is given up, and
// those made afterwards get CloseGrace.
type Header struct {
	Base    http.RoundTripper
	Headers http.Header
	Track   *Tracker
	Status  *HTTPStatus
	Limit   *MessageLimit
}

func (t *Header) RoundTrip(r *http.Request) (*http.Response, error) {
	traced := trace.SpanContextFromContext(r.Context()).IsValid()
	if len(t.Headers) > 0 || traced {
		r = r.Clone(r.Context())
		for k, vs := range t.Headers {
			r.Header[k] = append([]string(nil), vs...)
		}
		if traced {
			// The request's trace context (the call's MCP span) goes to
			// the server as traceparent and tracestate headers.
			tracing.Propagator.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
		}
	}
	if t.Track == nil {
		return t.Base.RoundTrip(r)
	}
	notice := r.Method == http.MethodPost && postsNotice(r)
	var (
		ctx    context.Context
		cancel context.CancelFunc
		stop   = func() bool { return false }
	)
	if t.Track.abortCtx.Err() == nil {
		ctx, cancel = context.WithCancel(r.Context())
		stop = context.AfterFunc(t.Track.abortCtx, cancel)
	} else {
		// Made while closing (streamable HTTP's DELETE): bounded.
		ctx, cancel = context.WithTimeout(r.Context(), CloseGrace)
	}
	release := func() { stop(); cancel() }
	resp, err := t.Base.RoundTrip(r.WithContext(ctx))
	if notice {
		t.Track.NoticeWritten()
	}
	if err != nil {
		release()
		return nil, err
	}
	t.Status.record(r.Method, resp.StatusCode)
	t.Limit.wrap(resp)
	resp.Body = &releaseBody{ReadCloser: resp.Body, release: release}
	return resp, nil
}

// postsNotice reports whether r's body is a notifications/cancelled.
func postsNotice(r *http.Request) bool {
	if r.GetBody == nil {
		return false
	}
	b, err := r.GetBody()
	if err != nil {
		return false
	}
	defer b.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(b, head)
	return bytes.Contains(head[:n], []byte(`"method":"`+MethodCancelled+`"`))
}

// releaseBody runs release once the body is closed.
type releaseBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *releaseBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}
