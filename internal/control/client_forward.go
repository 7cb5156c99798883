package control

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/toolhostd/toolhostd/internal/message"
)

// NewClient is a client of the control API at base (http://host:port)
// sending token as its bearer token, through hc (nil:
// http.DefaultClient). Unlike DialTCP it does not connect first: a cluster
// host uses it to reach another's API.
func NewClient(base, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	base = strings.TrimSuffix(base, "/")
	return &Client{where: strings.TrimPrefix(strings.TrimPrefix(base, "http://"), "https://"), base: base, token: token, hc: hc}
}

// ForwardRequest is a message a cluster host forwards to the host that
// runs its agent.
type ForwardRequest struct {
	By             string // the forwarding member
	ID             string // the message's id on the forwarding host
	Agent, Session string
	Sender         string
	Content        string
	IdempotencyKey string
	Audit          bool
}

// streamIdle is how long a forwarded reply stream may stay silent before
// it counts as broken: the server writes a keep-alive every sseKeepAlive,
// so only a dead connection (a host cut off without a reset) is silent
// that long.
var streamIdle = 3 * sseKeepAlive

// EventStream is a message's reply as Server-Sent Events; Close it.
type EventStream struct {
	// ID is the message's id on the host that answered.
	ID   string
	body io.ReadCloser
}

func newEventStream(id string, body io.ReadCloser) *EventStream {
	return &EventStream{ID: id, body: &idleReader{rc: body, t: time.AfterFunc(streamIdle, func() { body.Close() })}}
}

// idleReader closes its body when no byte came for streamIdle.
type idleReader struct {
	rc io.ReadCloser
	t  *time.Timer
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	if n > 0 {
		r.t.Reset(streamIdle)
	}
	return n, err
}

func (r *idleReader) Close() error {
	r.t.Stop()
	return r.rc.Close()
}

// Read calls onEvent for each event numbered above *last (moving *last
// on) until the terminal one (ended true) or the stream breaks.
func (s *EventStream) Read(last *uint64, onEvent func(message.Event)) (ended bool, err error) {
	return readEvents(s.body, last, onEvent)
}

// Close ends the stream.
func (s *EventStream) Close() error { return s.body.Close() }

// Forward sends f, marked as forwarded, and returns its reply stream once
// the other host accepted it; a refusal is an *APIError (421: that host
// does not run the agent now).
func (c *Client) Forward(ctx context.Context, f ForwardRequest) (*EventStream, error) {
	return c.postStream(ctx, f.Agent, SendRequest{Content: &f.Content, Session: f.Session}, func(h http.Header) {
		h.Set(HeaderForwardedBy, f.By)
		h.Set(HeaderSender, f.Sender)
		if f.ID != "" {
			h.Set(HeaderMessageID, f.ID)
		}
		if f.Audit {
			h.Set(HeaderAudit, "true")
		}
		if f.IdempotencyKey != "" {
			h.Set("Idempotency-Key", f.IdempotencyKey)
		}
	})
}

// postStream posts req to agent asking for its reply as a stream, with
// header's additions; a refusal is an *APIError.
func (c *Client) postStream(ctx context.Context, agent string, req SendRequest, header func(http.Header)) (*EventStream, error) {
	body, _ := json.Marshal(req)
	resp, err := c.request(ctx, http.MethodPost, "/v1/agents/"+url.PathEscape(agent)+"/messages", body, func(h http.Header) {
		h.Set("Accept", "text/event-stream")
		header(h)
	})
	if err != nil {
		return nil, err
	}
	return newEventStream(resp.Header.Get(HeaderMessageID), resp.Body), nil
}

// Follow resumes agent's message id's reply stream after event number
// after.
func (c *Client) Follow(ctx context.Context, agent, id string, after uint64) (*EventStream, error) {
	resp, err := c.request(ctx, http.MethodGet, "/v1/agents/"+url.PathEscape(agent)+"/messages/"+url.PathEscape(id), nil, func(h http.Header) {
		h.Set("Accept", "text/event-stream")
		h.Set("Last-Event-ID", id+":"+strconv.FormatUint(after, 10))
	})
	if err != nil {
		return nil, err
	}
	return newEventStream(id, resp.Body), nil
}
