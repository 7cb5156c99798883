package control_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/message"
)

// TestForwardedStreamIdle: a forwarded reply stream that goes silent (a
// host cut off without a reset: no event, no keep-alive) breaks after the
// idle bound instead of hanging; the events before it were read.
func TestForwardedStreamIdle(t *testing.T) {
	defer control.SetStreamIdle(control.SetStreamIdle(200 * time.Millisecond))
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(control.HeaderForwardedBy) != "a" || r.Header.Get(control.HeaderSender) != "agent:x" {
			http.Error(w, "not marked", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set(control.HeaderMessageID, "m1")
		fmt.Fprint(w, "id: m1:1\nevent: delta\ndata: {\"text\":\"x\"}\n\n")
		w.(http.Flusher).Flush()
		select { // silent until the test ends
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c := control.NewClient(srv.URL, "tok", nil)
	defer c.Close()
	s, err := c.Forward(t.Context(), control.ForwardRequest{By: "a", Agent: "x", Sender: "agent:x", Content: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.ID != "m1" {
		t.Errorf("id %q", s.ID)
	}
	var got []message.Event
	var last uint64
	start := time.Now()
	ended, err := s.Read(&last, func(ev message.Event) { got = append(got, ev) })
	if ended || err == nil || len(got) != 1 || got[0].Text != "x" || last != 1 {
		t.Fatalf("read: ended %v, %v, %+v", ended, err, got)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the silent stream broke after %s", took)
	}
}

// TestSendStreamResumesSilent: SendStream (toolhostd send) picks a reply
// stream that went silent (no event, no keep-alive) up again from its last
// event, like a forwarding host's relay, instead of hanging on it.
func TestSendStreamResumesSilent(t *testing.T) {
	defer control.SetStreamIdle(control.SetStreamIdle(200 * time.Millisecond))
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost:
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set(control.HeaderMessageID, "m1")
			fmt.Fprint(w, "id: m1:1\nevent: delta\ndata: {\"text\":\"a\"}\n\n")
			w.(http.Flusher).Flush()
			select { // silent until the test ends
			case <-release:
			case <-r.Context().Done():
			}
		case r.Header.Get("Accept") == "text/event-stream":
			if r.Header.Get("Last-Event-ID") != "m1:1" {
				http.Error(w, "resumed at "+r.Header.Get("Last-Event-ID"), http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "id: m1:2\nevent: reply\ndata: {\"text\":\"ab\"}\n\n")
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"m1","agent":"x","sender":"api","status":"done","reply":"ab","events":2}`)
		}
	}))
	defer srv.Close()
	defer close(release)
	c := control.NewClient(srv.URL, "tok", nil)
	defer c.Close()
	var got []message.Event
	st, err := c.SendStream(t.Context(), "x", "hi", control.SendOptions{}, func(ev message.Event) { got = append(got, ev) })
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != message.StatusDone || st.Reply != "ab" || len(got) != 2 || got[0].Text != "a" || got[1].Kind != message.KindReply {
		t.Errorf("status %+v, events %+v", st, got)
	}
}
