package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Waits of a message request that does not stream.
const (
	// DefaultMessageWait is how long POST .../messages waits for the reply
	// before answering 202 when ?wait= is not given.
	DefaultMessageWait = 30 * time.Second
	// MaxMessageWait caps ?wait=.
	MaxMessageWait = 5 * time.Minute
	// maxMessageBody bounds a message request's body (the agent's
	// max_message_bytes is checked on the content by the router).
	maxMessageBody = 32 << 20
	// sseKeepAlive is how often an idle stream gets a comment line, so
	// that proxies and clients do not time it out.
	sseKeepAlive = 15 * time.Second
)

// Messenger is the message path the API drives (message.Router).
type Messenger interface {
	Send(ctx context.Context, req message.Request) (*message.Message, bool, error)
	Get(agent, id string) (*message.Message, bool)
}

// SendRequest is the body of POST /v1/agents/{name}/messages.
type SendRequest struct {
	Content *string `json:"content"`
	Session string  `json:"session,omitempty"`
}

// MessageStatus is a message as the API answers it (message.View).
type MessageStatus = message.View

// messageRoutes adds the message endpoints to mux.
func (s *Server) messageRoutes(mux *http.ServeMux) {
	mux.HandleFunc("/v1/agents/{name}/messages", only(http.MethodPost, s.postMessage))
	mux.HandleFunc("/v1/agents/{name}/messages/{id}", s.messageByID)
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) {
	if s.opts.Messages == nil {
		writeError(w, http.StatusNotFound, "messages are not served here")
		return
	}
	agent := r.PathValue("name")
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxMessageBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", tooBig.Limit))
			return
		}
		writeError(w, http.StatusBadRequest, "reading the request: "+err.Error())
		return
	}
	var req SendRequest
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "the body must be a JSON object {\"content\": string, \"session\"?: string}: "+err.Error())
		return
	}
	if req.Content == nil {
		writeError(w, http.StatusBadRequest, `the body has no "content"`)
		return
	}
	wait, ok := waitParam(w, r)
	if !ok {
		return
	}
	mreq := message.Request{
		Agent: agent, Session: req.Session, Sender: message.SenderAPI, Content: *req.Content,
		IdempotencyKey: r.Header.Get("Idempotency-Key"),
	}
	ctx, ok := forwarded(w, r.WithContext(traceContext(r)), &mreq)
	if !ok {
		return
	}
	m, existing, err := s.opts.Messages.Send(ctx, mreq)
	if err != nil {
		writeSendError(w, err)
		return
	}
	w.Header().Set("Location", "/v1/agents/"+agent+"/messages/"+m.ID())
	w.Header().Set(HeaderMessageID, m.ID())
	if existing {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if wantsStream(r) {
		s.stream(w, r, m, lastEventID(r, m.ID()))
		return
	}
	answer(w, r, m, wait)
}

func (s *Server) messageByID(w http.ResponseWriter, r *http.Request) {
	if s.opts.Messages == nil {
		writeError(w, http.StatusNotFound, "messages are not served here")
		return
	}
	agent, id := r.PathValue("name"), r.PathValue("id")
	m, found := s.opts.Messages.Get(agent, id)
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if !found {
			writeError(w, http.StatusNotFound, fmt.Sprintf("agent %q has no message %s (unknown, or past the retention window)", agent, id))
			return
		}
		if wantsStream(r) {
			s.stream(w, r, m, lastEventID(r, id))
			return
		}
		wait := time.Duration(0)
		if r.URL.Query().Has("wait") {
			var ok bool
			if wait, ok = waitParam(w, r); !ok {
				return
			}
		}
		answer(w, r, m, wait)
	case http.MethodDelete:
		if !found {
			writeError(w, http.StatusNotFound, fmt.Sprintf("agent %q has no message %s (unknown, or past the retention window)", agent, id))
			return
		}
		m.Cancel()
		writeJSON(w, http.StatusOK, m.View())
	default:
		w.Header().Set("Allow", "GET, HEAD, DELETE")
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed; use GET or DELETE", r.Method))
	}
}

// answer writes the message's state once it has ended or wait has passed:
// 200 when its reply has ended, 202 while it goes on.
func answer(w http.ResponseWriter, r *http.Request, m *message.Message, wait time.Duration) {
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-m.Done():
		case <-t.C:
		case <-r.Context().Done():
		}
		t.Stop()
	}
	v := m.View()
	status := http.StatusOK
	select {
	case <-m.Done():
	default:
		status = http.StatusAccepted
	}
	writeJSON(w, status, v)
}

// waitParam is ?wait= (default DefaultMessageWait, at most MaxMessageWait);
// false after answering 400.
func waitParam(w http.ResponseWriter, r *http.Request) (time.Duration, bool) {
	q := r.URL.Query().Get("wait")
	if q == "" {
		return DefaultMessageWait, true
	}
	d, err := time.ParseDuration(q)
	if err != nil {
		if n, nerr := strconv.Atoi(q); nerr == nil {
			d, err = time.Duration(n)*time.Second, nil
		}
	}
	if err != nil || d < 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("wait=%q: want a duration such as 30s", q))
		return 0, false
	}
	return min(d, MaxMessageWait), true
}

func wantsStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// lastEventID is the event number a resuming client saw last: its
// Last-Event-ID, "ID:N" of this message or a bare N; 0 for none.
func lastEventID(r *http.Request, id string) uint64 {
	v := strings.TrimSpace(r.Header.Get("Last-Event-ID"))
	if v == "" {
		return 0
	}
	if msg, n, ok := strings.Cut(v, ":"); ok {
		if msg != id {
			return 0
		}
		v = n
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// writeSendError answers a refused message with its status: 404 unknown
// agent, 403 sender not accepted, 409 cannot receive messages, 413 too
// large, 421 a forwarded message for an agent this host does not run,
// 429 busy (with Retry-After), 503 unavailable.
func writeSendError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, message.ErrUnknownAgent):
		status = http.StatusNotFound
	case errors.Is(err, message.ErrDenied):
		status = http.StatusForbidden
	case errors.Is(err, message.ErrUnsupported):
		status = http.StatusConflict
	case errors.Is(err, message.ErrTooLarge):
		status = http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrMisdirected):
		status = http.StatusMisdirectedRequest
	case errors.Is(err, message.ErrBusy):
		status = http.StatusTooManyRequests
		w.Header().Set("Retry-After", "1")
	case errors.Is(err, message.ErrUnavailable), errors.Is(err, ErrUnavailable):
		status = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "1")
	}
	writeError(w, status, tooling.AsError(err).Message)
}

// stream writes the message's reply events after event number after as
// Server-Sent Events (id "MESSAGE:N", event delta, reply or error, data a
// JSON object), until the terminal one or until the client goes; the
// message goes on either way.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, m *message.Message, after uint64) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if r.Method == http.MethodHead {
		return
	}
	keep := time.NewTicker(sseKeepAlive)
	defer keep.Stop()
	for {
		evs, ended, changed := m.After(after)
		for _, ev := range evs {
			if _, err := io.WriteString(w, sseEvent(m.ID(), ev)); err != nil {
				return
			}
			after = ev.Seq
		}
		if err := rc.Flush(); err != nil {
			return
		}
		if ended && len(evs) == 0 || len(evs) > 0 && evs[len(evs)-1].Terminal() {
			return
		}
		select {
		case <-changed:
		case <-keep.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

// sseEvent is one reply event in the text/event-stream format.
func sseEvent(msgID string, ev message.Event) string {
	var data any
	switch ev.Kind {
	case message.KindError:
		data = struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}{ev.Code, ev.Text}
	default:
		data = struct {
			Text string `json:"text"`
		}{ev.Text}
	}
	b, _ := json.Marshal(data) // plain strings: cannot fail
	return fmt.Sprintf("id: %s:%d\nevent: %s\ndata: %s\n\n", msgID, ev.Seq, ev.Kind, b)
}
