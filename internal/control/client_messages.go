package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/toolhostd/toolhostd/internal/message"
)

// SendOptions are a message's optional parts.
type SendOptions struct {
	Session        string
	IdempotencyKey string
}

// ErrRefused is in the chain of a message the daemon did not accept (an
// *APIError: unknown agent, sender not accepted, too large, busy, ...).
var ErrRefused = errors.New("message refused")

// MaxResumes bounds how often a client picks a broken reply stream up
// again (SendStream here, a forwarding host's relay).
const MaxResumes = 5

// SendStream sends content to agent and follows its reply as it streams:
// onEvent gets every event once, in order (deltas, then the one reply or
// error). A stream that breaks, or stays silent past its keep-alives, is
// resumed from the last event seen. It returns the message's final state.
func (c *Client) SendStream(ctx context.Context, agent, content string, o SendOptions, onEvent func(message.Event)) (MessageStatus, error) {
	s, err := c.postStream(ctx, agent, SendRequest{Content: &content, Session: o.Session}, func(h http.Header) {
		if o.IdempotencyKey != "" {
			h.Set("Idempotency-Key", o.IdempotencyKey)
		}
	})
	if err != nil {
		return MessageStatus{}, err
	}
	id := s.ID
	var last uint64
	for attempt := 0; ; attempt++ {
		ended, err := s.Read(&last, onEvent)
		s.Close()
		if ended {
			break
		}
		if ctx.Err() != nil {
			return MessageStatus{}, ctx.Err()
		}
		if id == "" || attempt == MaxResumes {
			return MessageStatus{}, fmt.Errorf("toolhostd at %s: the reply stream broke: %v", c.where, err)
		}
		if s, err = c.Follow(ctx, agent, id, last); err != nil {
			return MessageStatus{}, err
		}
	}
	if id == "" {
		return MessageStatus{}, fmt.Errorf("toolhostd at %s: the answer named no message id", c.where)
	}
	return c.Message(ctx, agent, id)
}

// Send sends content to agent and waits up to the daemon's wait for the
// reply: a status of done, failed or cancelled, or (past the wait) queued
// or working.
func (c *Client) Send(ctx context.Context, agent, content string, o SendOptions) (MessageStatus, error) {
	body, _ := json.Marshal(SendRequest{Content: &content, Session: o.Session})
	resp, err := c.request(ctx, http.MethodPost, "/v1/agents/"+url.PathEscape(agent)+"/messages", body, func(h http.Header) {
		if o.IdempotencyKey != "" {
			h.Set("Idempotency-Key", o.IdempotencyKey)
		}
	})
	if err != nil {
		return MessageStatus{}, err
	}
	defer resp.Body.Close()
	var st MessageStatus
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&st); err != nil {
		return MessageStatus{}, fmt.Errorf("toolhostd at %s: bad answer: %w", c.where, err)
	}
	return st, nil
}

// Message is the state of agent's message id.
func (c *Client) Message(ctx context.Context, agent, id string) (MessageStatus, error) {
	var st MessageStatus
	err := c.do(ctx, http.MethodGet, "/v1/agents/"+url.PathEscape(agent)+"/messages/"+url.PathEscape(id), &st)
	return st, err
}

// WaitMessage is the state of agent's message id once its reply has ended
// or wait has passed (at most MaxMessageWait).
func (c *Client) WaitMessage(ctx context.Context, agent, id string, wait time.Duration) (MessageStatus, error) {
	var st MessageStatus
	err := c.do(ctx, http.MethodGet, "/v1/agents/"+url.PathEscape(agent)+"/messages/"+url.PathEscape(id)+"?wait="+wait.String(), &st)
	return st, err
}

// CancelMessage cancels agent's message id.
func (c *Client) CancelMessage(ctx context.Context, agent, id string) (MessageStatus, error) {
	var st MessageStatus
	err := c.do(ctx, http.MethodDelete, "/v1/agents/"+url.PathEscape(agent)+"/messages/"+url.PathEscape(id), &st)
	return st, err
}

// request makes one request with body and returns a 2xx response (its body
// open); any other status is an *APIError that also wraps ErrRefused.
func (c *Client) request(ctx context.Context, method, path string, body []byte, header func(http.Header)) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	resp, err := c.send(ctx, method, path, rd, func(h http.Header) {
		if body != nil {
			h.Set("Content-Type", "application/json")
		}
		header(h)
	})
	var ae *APIError
	if errors.As(err, &ae) {
		return nil, refusedError{ae}
	}
	return resp, err
}

// refusedError is an APIError answering a message request.
type refusedError struct{ *APIError }

func (e refusedError) Unwrap() []error { return []error{e.APIError, ErrRefused} }

// readEvents reads Server-Sent Events from r, calling onEvent for those
// numbered above *last (and moving *last on); it reports whether the
// terminal event came.
func readEvents(r io.Reader, last *uint64, onEvent func(message.Event)) (bool, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var id, kind string
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		if line != "" {
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				id = value
			case "event":
				kind = value
			case "data":
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.WriteString(value)
			}
			continue
		}
		if kind == "" && data.Len() == 0 {
			continue // a comment's end
		}
		ev, err := parseEvent(id, kind, data.String())
		id, kind = "", ""
		data.Reset()
		if err != nil {
			return false, err
		}
		if ev.Seq <= *last {
			continue
		}
		*last = ev.Seq
		onEvent(ev)
		if ev.Terminal() {
			return true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return false, err
	}
	return false, io.ErrUnexpectedEOF
}

func parseEvent(id, kind, data string) (message.Event, error) {
	_, n, _ := strings.Cut(id, ":")
	seq, err := strconv.ParseUint(n, 10, 64)
	if err != nil {
		return message.Event{}, fmt.Errorf("event id %q: %w", id, err)
	}
	var d struct {
		Text    string `json:"text"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal([]byte(data), &d); err != nil {
		return message.Event{}, fmt.Errorf("event %s: %w", id, err)
	}
	ev := message.Event{Seq: seq, Kind: kind, Text: d.Text}
	if kind == message.KindError {
		ev.Code, ev.Text = d.Code, d.Message
	}
	return ev, nil
}
