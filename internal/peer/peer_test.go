package peer_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"go.uber.org/goleak"

	"github.com/toolhostd/toolhostd/internal/a2aserve"
	"github.com/toolhostd/toolhostd/internal/expose"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/peer"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/testenv/talker"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// remote is another host: an A2A endpoint over a talker whose agent talk
// accepts a2a.
type remote struct {
	tk     *talker.Talker
	router *message.Router
	srv    *a2aserve.Server
	url    string
}

func newRemote(t *testing.T, token string) *remote {
	t.Helper()
	tk := talker.New(t, 8, map[string]message.Target{"talk": {Accepts: []string{"a2a"}}})
	r := &remote{tk: tk, router: message.NewRouter(tk, message.Options{})}
	hs := httptest.NewUnstartedServer(nil)
	r.url = "http://" + hs.Listener.Addr().String()
	srv, err := a2aserve.New(a2aserve.Options{Router: r.router, BaseURL: r.url, Listen: "127.0.0.1:0", Token: token,
		Catalog: expose.NewStatic(map[string][]expose.Agent{expose.A2A: {{Name: "talk", Description: "talks back"}}})})
	if err != nil {
		hs.Close()
		t.Fatal(err)
	}
	r.srv, hs.Config.Handler = srv, srv
	hs.Start()
	t.Cleanup(func() { srv.Close(); hs.Close() })
	return r
}

// peers is the local host's message.Agents: one peer, "far".
type peers struct{ p *peer.Peer }

func (ps peers) Target(agent string) (message.Target, error) {
	if agent != "far" {
		return message.Target{}, message.Refuse(message.ErrUnknownAgent, tooling.CodeNotFound, "no agent %q", agent)
	}
	return ps.p.Target(), nil
}

func (ps peers) Deliver(ctx context.Context, m *message.Message) error { return ps.p.Deliver(ctx, m) }

func local(t *testing.T, cardURL, token string) *message.Router {
	t.Helper()
	r, _ := localPeer(t, cardURL, token)
	return r
}

func localPeer(t *testing.T, cardURL, token string) (*message.Router, *peer.Peer) {
	t.Helper()
	p, err := peer.New(peer.Options{Name: "far", CardURL: cardURL, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return message.NewRouter(peers{p}, message.Options{}), p
}

// events waits for m's reply and returns its events.
func events(t *testing.T, m *message.Message) []message.Event {
	t.Helper()
	testenv.Recv(t, m.Done(), 20*time.Second, "the peer's reply")
	evs, _, _ := m.After(0)
	return evs
}

func TestRoundTrip(t *testing.T) {
	r := newRemote(t, "tok")
	lr := local(t, r.srv.CardURL("talk"), "tok")
	for _, tc := range []struct {
		name, content, session string
		deltas                 []string
		kind, code, text       string
	}{
		{"reply", "hello", "", nil, message.KindReply, "", "hello"},
		{"deltas then reply", "words a b", "", []string{"a ", "b ", "."}, message.KindReply, "", "a b ."},
		{"session is the contextId", "session", "s9", []string{"s9"}, message.KindReply, "", "s9"},
		{"reply-error", "fail", "", nil, message.KindError, message.CodeReplyError, "cannot do that"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, err := lr.Send(t.Context(), message.Request{Agent: "far", Session: tc.session, Sender: "agent:router", Content: tc.content})
			if err != nil {
				t.Fatal(err)
			}
			evs := events(t, m)
			var deltas []string
			for _, ev := range evs[:len(evs)-1] {
				deltas = append(deltas, ev.Text)
			}
			last := evs[len(evs)-1]
			if tc.deltas != nil && strings.Join(deltas, "|") != strings.Join(tc.deltas, "|") {
				t.Errorf("deltas %q, want %q", deltas, tc.deltas)
			}
			if last.Kind != tc.kind || last.Code != tc.code || last.Text != tc.text {
				t.Fatalf("end %+v, want %s %s %q", last, tc.kind, tc.code, tc.text)
			}
			// The remote kept it as a message from "a2a" in the same session.
			if open, retained, _ := r.router.Stats(); open != 0 || retained == 0 {
				t.Fatalf("remote: %d open, %d retained", open, retained)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	r := newRemote(t, "")
	lr := local(t, r.srv.CardURL("talk"), "")
	m, _, err := lr.Send(t.Context(), message.Request{Agent: "far", Sender: "api", Content: "hold"})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "the remote's first delta", func() bool {
		return m.View().Reply == "holding "
	})
	if !m.Cancel() {
		t.Fatal("not open")
	}
	testenv.Eventually(t, 20*time.Second, "the remote message to be cancelled", func() bool {
		open, _, _ := r.router.Stats()
		return open == 0
	})
	if v := m.View(); v.Status != message.StatusCancelled {
		t.Fatalf("local %+v", v)
	}
}

func TestUnreachable(t *testing.T) {
	for _, tc := range []struct{ name, token string }{{"no card", ""}, {"wrong token", "guess"}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRemote(t, "tok")
			card := r.srv.CardURL("talk")
			if tc.name == "no card" {
				card = r.url + "/nobody/.well-known/agent-card.json"
			}
			lr := local(t, card, tc.token)
			m, _, err := lr.Send(t.Context(), message.Request{Agent: "far", Sender: "api", Content: "hi"})
			if tc.name == "no card" {
				if err == nil || !strings.Contains(err.Error(), "agent card") {
					t.Fatalf("want an unavailable refusal, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			evs := events(t, m)
			if last := evs[len(evs)-1]; last.Code != "unavailable" || !strings.Contains(last.Text, "401") && !strings.Contains(strings.ToLower(last.Text), "unauth") {
				t.Fatalf("want unavailable with the 401, got %+v", last)
			}
		})
	}
}

// TestV03 reaches the remote through a card that offers only its A2A 0.3
// interface (as a 0.3-only agent's would).
func TestV03(t *testing.T) {
	r := newRemote(t, "")
	card := &a2a.AgentCard{Name: "talk", Description: "talks back", Version: "0",
		Capabilities: a2a.AgentCapabilities{Streaming: true},
		SupportedInterfaces: []*a2a.AgentInterface{{URL: r.url + "/talk" + a2aserve.V0Path,
			ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version}}}
	cs := httptest.NewServer(a2asrv.NewAgentCardHandler(a2av0.NewStaticAgentCardProducer(card)))
	t.Cleanup(cs.Close)
	lr := local(t, cs.URL+"/card.json", "")
	m, _, err := lr.Send(t.Context(), message.Request{Agent: "far", Sender: "api", Content: "words over 0.3"})
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, m)
	if last := evs[len(evs)-1]; last.Kind != message.KindReply || last.Text != "over 0.3 ." || len(evs) != 4 {
		t.Fatalf("events %+v", evs)
	}
}

func TestCloseEndsStreams(t *testing.T) {
	r := newRemote(t, "")
	lr, p := localPeer(t, r.srv.CardURL("talk"), "")
	m, _, err := lr.Send(t.Context(), message.Request{Agent: "far", Sender: "api", Content: "hold"})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "the remote's first delta", func() bool {
		return m.View().Reply == "holding "
	})
	p.Close()
	v := m.View()
	if v.Status != message.StatusFailed || v.Error == nil || v.Error.Code != "unavailable" || !strings.Contains(v.Error.Message, "stopping") {
		t.Fatalf("after Close: %+v %+v", v, v.Error)
	}
}
