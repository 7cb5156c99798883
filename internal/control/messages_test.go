package control_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/control/controltest"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/testenv/talker"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// agents are the talker's: "talk" answers like a guest would (see
// talker), "old" is an agent that cannot receive messages.
type agents struct{ *talker.Talker }

func newAgents(t *testing.T, capacity int) agents {
	target := message.Target{Accepts: []string{"api"}, MaxMessageBytes: 64}
	return agents{talker.New(t, capacity, map[string]message.Target{"talk": target, "old": target})}
}

func (a agents) Deliver(ctx context.Context, m *message.Message) error {
	if m.Agent() == "old" {
		return message.ErrUnsupported
	}
	return a.Talker.Deliver(ctx, m)
}

func messageServer(t *testing.T, capacity int) (agents, *control.Client, *http.Client, string) {
	t.Helper()
	tk := newAgents(t, capacity)
	sock := filepath.Join(t.TempDir(), "c.sock")
	s, err := control.NewServer(control.Options{Backend: controltest.NewBackend(), Socket: sock,
		Messages: message.NewRouter(tk, message.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	select {
	case <-s.Listening():
	case err := <-done:
		t.Fatal(err)
	}
	c, err := control.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return tk, c, unixHTTP(sock), "http://toolhostd"
}

func post(t *testing.T, hc *http.Client, url, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return resp, []byte(b.String())
}

func TestMessageJSON(t *testing.T) {
	_, c, hc, base := messageServer(t, 8)
	resp, body := post(t, hc, base+"/v1/agents/talk/messages", `{"content":"words a b","session":"s1"}`, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var st control.MessageStatus
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	if st.Status != message.StatusDone || st.Reply != "a b ." || st.Agent != "talk" || st.Session != "s1" || st.ID == "" {
		t.Fatalf("answer %+v", st)
	}
	if loc := resp.Header.Get("Location"); loc != "/v1/agents/talk/messages/"+st.ID {
		t.Fatalf("Location %q", loc)
	}
	got, err := c.Message(t.Context(), "talk", st.ID)
	if err != nil || got.Reply != "a b ." {
		t.Fatalf("GET: %+v %v", got, err)
	}
	failed, err := c.Send(t.Context(), "talk", "fail", control.SendOptions{})
	if err != nil || failed.Status != message.StatusFailed || failed.Error == nil ||
		failed.Error.Code != message.CodeReplyError || failed.Error.Message != "cannot do that" {
		t.Fatalf("reply-error: %+v %v", failed, err)
	}
}

func TestMessageRefusals(t *testing.T) {
	_, _, hc, base := messageServer(t, 1)
	for _, tc := range []struct {
		name, agent, body string
		status            int
	}{
		{"unknown agent", "nobody", `{"content":"x"}`, http.StatusNotFound},
		{"no messages", "old", `{"content":"x"}`, http.StatusConflict},
		{"too large", "talk", `{"content":"` + strings.Repeat("x", 65) + `"}`, http.StatusRequestEntityTooLarge},
		{"no content", "talk", `{"session":"s"}`, http.StatusBadRequest},
		{"not json", "talk", `hello`, http.StatusBadRequest},
		{"unknown field", "talk", `{"content":"x","extra":1}`, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, hc, base+"/v1/agents/"+tc.agent+"/messages", tc.body, nil)
			if resp.StatusCode != tc.status || !strings.Contains(string(body), `"error"`) {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
		})
	}
}

func TestMessageBusy(t *testing.T) {
	tk, _, hc, base := messageServer(t, 1)
	defer tk.Release()
	resp, _ := post(t, hc, base+"/v1/agents/talk/messages?wait=0s", `{"content":"block"}`, nil)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("block: %d", resp.StatusCode)
	}
	// The guest took "block" out of the inbox; fill the inbox again with a
	// message it cannot read while blocked, then one more is refused.
	testenv.Eventually(t, 10*time.Second, "the guest to take the held message", func() bool { return tk.Pending() == 0 })
	post(t, hc, base+"/v1/agents/talk/messages?wait=0s", `{"content":"queued"}`, nil)
	resp, body := post(t, hc, base+"/v1/agents/talk/messages?wait=0s", `{"content":"one too many"}`, nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("status %d (Retry-After %q): %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

func TestMessageSSE(t *testing.T) {
	_, c, hc, base := messageServer(t, 8)
	resp, body := post(t, hc, base+"/v1/agents/talk/messages", `{"content":"words x y z"}`, map[string]string{"Accept": "text/event-stream"})
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	id := resp.Header.Get("Toolhostd-Message-Id")
	want := "id: " + id + ":1\nevent: delta\ndata: {\"text\":\"x \"}\n\n" +
		"id: " + id + ":2\nevent: delta\ndata: {\"text\":\"y \"}\n\n" +
		"id: " + id + ":3\nevent: delta\ndata: {\"text\":\"z \"}\n\n" +
		"id: " + id + ":4\nevent: reply\ndata: {\"text\":\"x y z .\"}\n\n"
	if string(body) != want {
		t.Fatalf("stream:\n%s\nwant:\n%s", body, want)
	}
	// Resumption: GET with Last-Event-ID gets the events after it.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/v1/agents/talk/messages/"+id, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", id+":2")
	r2, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Body.Close()
	var got []message.Event
	var last uint64 = 2
	if _, err := control.ReadEvents(r2.Body, &last, func(ev message.Event) { got = append(got, ev) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Seq != 3 || got[1].Kind != message.KindReply || got[1].Text != "x y z ." {
		t.Fatalf("resumed: %+v", got)
	}
	// The typed client streams the same.
	var text strings.Builder
	st, err := c.SendStream(t.Context(), "talk", "words p q", control.SendOptions{}, func(ev message.Event) {
		if ev.Kind == message.KindDelta {
			text.WriteString(ev.Text)
		}
	})
	if err != nil || st.Reply != "p q ." || text.String() != "p q " {
		t.Fatalf("SendStream: %+v %q %v", st, text.String(), err)
	}
}

// TestMessageResume: a client that drops the stream mid-reply gets the
// rest by id, and the message went on meanwhile.
func TestMessageResume(t *testing.T) {
	tk, c, hc, base := messageServer(t, 8)
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/agents/talk/messages", strings.NewReader(`{"content":"hold"}`))
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Idempotency-Key", "k1")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Header.Get("Toolhostd-Message-Id")
	// Read the first event ("holding "), then drop the connection.
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "id: "+id+":1\n" {
			break
		}
	}
	cancel()
	resp.Body.Close()
	tk.Release()
	// A retry with the same key resumes the same message instead of a new one.
	var rest []message.Event
	var mu sync.Mutex
	st, err := c.SendStream(t.Context(), "talk", "hold", control.SendOptions{IdempotencyKey: "k1"}, func(ev message.Event) {
		mu.Lock()
		rest = append(rest, ev)
		mu.Unlock()
	})
	if err != nil || st.ID != id || st.Reply != "holding released" {
		t.Fatalf("retry: %+v %v", st, err)
	}
	if len(rest) != 2 || rest[0].Seq != 1 || rest[1].Kind != message.KindReply {
		t.Fatalf("replayed events %+v", rest)
	}
}

func TestMessageWait(t *testing.T) {
	tk, c, hc, base := messageServer(t, 8)
	resp, body := post(t, hc, base+"/v1/agents/talk/messages?wait=10ms", `{"content":"hold"}`, nil)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("past the wait: %d %s", resp.StatusCode, body)
	}
	var st control.MessageStatus
	if err := json.Unmarshal(body, &st); err != nil || st.Status != message.StatusWorking {
		t.Fatalf("202 body %s: %v", body, err)
	}
	cancelled, err := c.CancelMessage(t.Context(), "talk", st.ID)
	if err != nil || cancelled.Status != message.StatusCancelled || cancelled.Error == nil || cancelled.Error.Code != tooling.CodeCancelled.String() {
		t.Fatalf("DELETE: %+v %v", cancelled, err)
	}
	tk.Release()
	if _, err := c.Message(t.Context(), "talk", "no-such-id"); !errors.Is(err, control.ErrUnknownAgent) && !strings.Contains(err.Error(), "no message") {
		t.Fatalf("unknown id: %v", err)
	}
	if resp, _ := post(t, hc, base+"/v1/agents/talk/messages?wait=xyz", `{"content":"a"}`, nil); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad wait: %d", resp.StatusCode)
	}
}
