package control

// GET /v1/agents/{name}/oplog: the oplog a durable agent's live (or cut
// off) instance keeps on this host, served by a Backend that is an
// OplogBackend.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
)

// OplogBackend is a Backend that keeps durable agents' oplogs.
type OplogBackend interface {
	// Oplog is the oplog of the agent's instance (of its session's, for a
	// per-session agent), with each entry's Data only when content is
	// set. It returns ErrUnknownAgent for an agent that is not configured
	// and an error wrapping ErrNoOplog when the agent has no oplog here.
	Oplog(agent, session string, content bool) (Oplog, error)
}

// ErrNoOplog is in the chain of the error of an agent without an oplog
// on this host: not durable, no instance of it ran, or its run ended.
// The API answers 404 with the error's text.
var ErrNoOplog = errors.New("no oplog")

// Oplog is GET /v1/agents/{name}/oplog's answer: one log.
type Oplog struct {
	Key       string       `json:"key"`       // "agent" or "agent/session"
	Component string       `json:"component"` // the content digest of the component that began it
	Started   time.Time    `json:"started"`   // when its instance started
	Entries   []OplogEntry `json:"entries"`
}

// OplogEntry is one entry of an Oplog.
type OplogEntry struct {
	Seq   uint64    `json:"seq"`
	Kind  string    `json:"kind"` // result, started, completed
	Call  string    `json:"call"` // the host function
	Bytes int       `json:"bytes"`
	At    time.Time `json:"at"`
	// Data is the encoded result (base64 in JSON), only with ?content=1.
	Data []byte `json:"data,omitempty"`
}

// oplogRoutes adds the oplog endpoint to mux.
func (s *Server) oplogRoutes(mux *http.ServeMux) {
	mux.HandleFunc("/v1/agents/{name}/oplog", only(http.MethodGet, s.getOplog))
}

func (s *Server) getOplog(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	q := r.URL.Query()
	content := false
	if v := q.Get("content"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("content=%q: want 1 or 0", v))
			return
		}
		content = b
	}
	ob, ok := s.opts.Backend.(OplogBackend)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("%v: this daemon keeps no oplogs", ErrNoOplog))
		return
	}
	l, err := ob.Oplog(name, q.Get("session"), content)
	switch {
	case errors.Is(err, ErrUnknownAgent):
		writeError(w, http.StatusNotFound, fmt.Sprintf("%v: %q", ErrUnknownAgent, name))
		return
	case errors.Is(err, ErrNoOplog):
		writeError(w, http.StatusNotFound, err.Error())
		return
	case errors.Is(err, ErrUnavailable):
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	case err != nil:
		s.log.Warn("oplog read failed", zap.String("agent", name), zap.Error(err))
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if l.Entries == nil {
		l.Entries = []OplogEntry{}
	}
	if !content {
		for i := range l.Entries {
			l.Entries[i].Data = nil
		}
	}
	writeJSON(w, http.StatusOK, l)
}

// Oplog is the oplog of agent's instance (session: of that session's),
// each entry's data only with content. A 404 is an error wrapping
// ErrUnknownAgent for an agent the daemon does not have, else ErrNoOplog.
func (c *Client) Oplog(ctx context.Context, agent, session string, content bool) (Oplog, error) {
	v := url.Values{}
	if session != "" {
		v.Set("session", session)
	}
	if content {
		v.Set("content", "1")
	}
	path := "/v1/agents/" + url.PathEscape(agent) + "/oplog"
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var l Oplog
	resp, err := c.send(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			if strings.HasPrefix(ae.Message, ErrUnknownAgent.Error()) {
				return l, agentError{ae}
			}
			return l, oplogError{ae}
		}
		return l, err
	}
	defer resp.Body.Close()
	// Not raw's bounded read: a log with its content may be large.
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		return Oplog{}, fmt.Errorf("toolhostd at %s: bad answer to GET %s: %w", c.where, path, err)
	}
	return l, nil
}

// oplogError is a 404 of the oplog endpoint for an agent that exists: it
// has no oplog.
type oplogError struct{ *APIError }

func (e oplogError) Unwrap() []error { return []error{e.APIError, ErrNoOplog} }
