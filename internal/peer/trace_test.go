package peer_test

import (
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolhostd/toolhostd/internal/a2aserve"
	"github.com/toolhostd/toolhostd/internal/expose"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/peer"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/testenv/talker"
)

// TestTraceContinues: a message to a remote A2A agent continues its trace
// there: the remote host's invoke_agent is a child of the local one's.
func TestTraceContinues(t *testing.T) {
	recLocal, recRemote := tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
	tpLocal := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recLocal))
	tpRemote := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recRemote))
	t.Cleanup(func() { _ = tpLocal.Shutdown(t.Context()); _ = tpRemote.Shutdown(t.Context()) })

	tk := talker.New(t, 8, map[string]message.Target{"talk": {Accepts: []string{"a2a"}}})
	remote := message.NewRouter(tk, message.Options{Tracer: tpRemote})
	hs := httptest.NewUnstartedServer(nil)
	url := "http://" + hs.Listener.Addr().String()
	srv, err := a2aserve.New(a2aserve.Options{Router: remote, BaseURL: url, Listen: "127.0.0.1:0",
		Catalog: expose.NewStatic(map[string][]expose.Agent{expose.A2A: {{Name: "talk", Description: "talks back"}}})})
	if err != nil {
		hs.Close()
		t.Fatal(err)
	}
	hs.Config.Handler = srv
	hs.Start()
	t.Cleanup(func() { srv.Close(); hs.Close() })

	p, err := peer.New(peer.Options{Name: "far", CardURL: srv.CardURL("talk")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	local := message.NewRouter(peers{p}, message.Options{Tracer: tpLocal})
	m, _, err := local.Send(t.Context(), message.Request{Agent: "far", Sender: "agent:router", Content: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if evs := events(t, m); evs[len(evs)-1].Text != "hello" {
		t.Fatalf("reply %+v", evs)
	}
	sent, got := testenv.EndedSpan(t, recLocal, "invoke_agent far"), testenv.EndedSpan(t, recRemote, "invoke_agent talk")
	if got.Parent().SpanID() != sent.SpanContext().SpanID() || got.SpanContext().TraceID() != sent.SpanContext().TraceID() {
		t.Fatalf("remote span %s/%s has parent %s, want the local span %s/%s",
			got.SpanContext().TraceID(), got.SpanContext().SpanID(), got.Parent().SpanID(), sent.SpanContext().TraceID(), sent.SpanContext().SpanID())
	}
}
