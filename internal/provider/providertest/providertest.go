// Package providertest is scripted fake model APIs for tests and
// benchmarks: in-process httptest servers that speak the wire format of
// OpenAI's Chat Completions API and of Anthropic's Messages API, whole and
// streamed (server-sent events), so that the real provider kinds, on the
// official SDKs, are what a test drives.
//
//	srv := providertest.New(t, providertest.OpenAI)
//	srv.Script(providertest.Reply{Status: 429, RetryAfter: "1"}, providertest.Reply{Text: []string{"Hel", "lo"}})
//	p, _ := provider.Open("gpt", srv.Config(t), zap.NewNop())
//	resp, err := p.ChatStream(ctx, req, onDelta) // retried once, then "Hello"
//	srv.Requests()                                  // both requests, as received
//
// Each request takes the next scripted Reply, or the default one
// (SetDefault; at first a short text answer) once the script is used up.
// A reply can fail (an HTTP error status of the API's own shape, with a
// Retry-After), cut its stream mid-way (the connection is closed), send a
// malformed chunk, or wait before its first token (and record that the
// client went away meanwhile: Request.Aborted). Every request is recorded
// with its headers and body, and what a test usually checks is decoded
// (model, max_tokens, system prompt, tool names, key).
package providertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/config"
)

// API is the wire format a Server speaks.
type API int

// The APIs.
const (
	OpenAI    API = iota // Chat Completions: POST /v1/chat/completions, GET /v1/models
	Anthropic            // Messages: POST /v1/messages, GET /v1/models
)

func (a API) String() string {
	if a == Anthropic {
		return "anthropic"
	}
	return "openai"
}

// DefaultKey is the API key a Server accepts unless told otherwise.
const DefaultKey = "test-key-5f0c2a"

// DefaultModel is the model Config gives a provider.
const DefaultModel = "fake-model-1"

// Reply is what the server answers one request with.
type Reply struct {
	// Status, when not 0 or 200, makes the reply an API error of that
	// status (with the API's error body); RetryAfter is then sent as the
	// Retry-After header when set.
	Status     int
	RetryAfter string
	// Text is the answer's text, one delta per piece when streamed.
	Text []string
	// ToolCalls are the tool calls of the answer; streamed, each one's
	// arguments arrive piece by piece, the calls' pieces interleaved
	// (OpenAI: merged by their index).
	ToolCalls []ToolCall
	// Finish is the API's own finish_reason (OpenAI) or stop_reason
	// (Anthropic); "" gives stop / end_turn, or tool_calls / tool_use when
	// there are tool calls.
	Finish string
	// InputTokens and OutputTokens are the usage reported (OpenAI: in the
	// usage chunk when the client asked for it; Anthropic: message_start
	// and message_delta).
	InputTokens, OutputTokens int
	// Model is the model named in the answer; "" echoes the request's.
	Model string
	// Delay holds the first token back (a whole reply: its body); if the
	// client goes away meanwhile the request is recorded as aborted.
	Delay time.Duration
	// Fault breaks the reply off after its first delta.
	Fault
	// AfterFirst, when set, is called once the first delta of a stream
	// is flushed, before the rest is sent (a test holds the stream there
	// while it kills the client's host).
	AfterFirst func()
	// Answer, when set, makes the reply from the request (to answer with
	// what a tool returned, say): the Reply it returns is sent instead of
	// this one.
	Answer func(*Request) Reply
}

// Fault is how a Reply breaks off after the first delta of a stream (a
// whole reply: in its body). The zero Fault is none.
type Fault struct {
	// Cut closes the connection after the first delta of a stream (a
	// whole reply: half way through its body).
	Cut bool
	// Malformed sends a chunk that is not JSON after the first delta (a
	// whole reply: a body that is not JSON).
	Malformed bool
	// ErrorEvent ends a stream after its first delta with the API's
	// in-stream error (OpenAI: a chunk holding "error"; Anthropic: an
	// error event, overloaded_error).
	ErrorEvent bool
}

// ToolCall is one tool call of a Reply: Name is the name on the API (as
// the client offered it), Arguments the pieces of its JSON arguments.
type ToolCall struct {
	ID        string
	Name      string
	Arguments []string
}

// Request is one request the server received.
type Request struct {
	Time   time.Time
	Method string
	Path   string
	Header http.Header
	Body   []byte // as received

	// Chat is decoded from Body (chat requests).
	Chat

	aborted chan struct{}
}

// Chat is what a Request's body says, for a chat request.
type Chat struct {
	Model        string
	Stream       bool
	IncludeUsage bool     // OpenAI: stream_options.include_usage
	MaxTokens    int      // OpenAI: max_completion_tokens (else max_tokens); Anthropic: max_tokens
	System       string   // the system prompt: OpenAI's system messages, Anthropic's system blocks, joined by "\n"
	Tools        []string // the tool names offered
	Temperature  *float64
	// ToolResults are the text of the tool results the request carries,
	// in order (OpenAI: tool messages; Anthropic: tool_result blocks).
	ToolResults []string
}

// Aborted is closed when the client went away before the reply was
// complete.
func (r *Request) Aborted() <-chan struct{} { return r.aborted }

// APIKey is the key the request carried: OpenAI's "Authorization: Bearer
// KEY", Anthropic's "x-api-key: KEY" or "Authorization: Bearer KEY".
func (r *Request) APIKey() string {
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return k
	}
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// Server is a fake model API.
type Server struct {
	API API
	// URL is the base_url a provider of this API uses (OpenAI: with /v1).
	URL string
	// Key is the API key the server accepts (DefaultKey; SetKey changes
	// it); any other gets a 401.
	Key string

	srv  *httptest.Server
	quit chan struct{}
	once sync.Once

	mu     sync.Mutex
	script []Reply
	def    Reply
	reqs   []*Request
	models []string
}

// New starts a fake of api; t's cleanup closes it.
func New(t testing.TB, api API) *Server {
	s := &Server{API: api, Key: DefaultKey, quit: make(chan struct{}),
		def:    Reply{Text: []string{"Hello", " from the", " fake."}, InputTokens: 12, OutputTokens: 4},
		models: []string{DefaultModel, "fake-model-2"}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	if api == OpenAI {
		s.URL += "/v1"
	}
	t.Cleanup(s.Close)
	return s
}

// Close stops the server; replies still waiting out a Delay end at once.
func (s *Server) Close() {
	s.once.Do(func() { close(s.quit) })
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Config is a provider config for this server: its kind, base_url, an
// api_key that is a ${file:...} reference to a file (in t.TempDir) holding
// Key, DefaultModel, no retries, and a 30s timeout.
func (s *Server) Config(t testing.TB) config.Provider {
	t.Helper()
	path := filepath.Join(t.TempDir(), "api-key")
	if err := os.WriteFile(path, []byte(s.Key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return config.Provider{
		Kind: s.API.String(), BaseURL: s.URL, APIKey: "${file:" + path + "}", Model: DefaultModel,
		Timeout: config.Duration{Duration: 30 * time.Second}, MaxRetries: 0, MaxTokens: config.DefaultProviderMaxTokens,
	}
}

// SetKey changes the key the server accepts (Config wrote the old one).
func (s *Server) SetKey(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Key = k
}

// Script queues replies: each request takes the next one.
func (s *Server) Script(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, replies...)
}

// SetDefault sets the reply of a request when the script is used up.
func (s *Server) SetDefault(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.def = r
}

// SetModels sets what GET /v1/models lists.
func (s *Server) SetModels(models ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = models
}

// Requests is every request received so far, in order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.reqs...)
}

// Last is the last request received (nil: none).
func (s *Server) Last() *Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		return nil
	}
	return s.reqs[len(s.reqs)-1]
}

func (s *Server) next() Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.script) > 0 {
		r := s.script[0]
		s.script = s.script[1:]
		return r
	}
	return s.def
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := &Request{Time: time.Now(), Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, aborted: make(chan struct{})}
	req.decode(s.API, body)
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()

	s.mu.Lock()
	key := s.Key
	s.mu.Unlock()
	if req.APIKey() != key {
		s.apiError(w, http.StatusUnauthorized, "", "invalid api key")
		return
	}
	if s.API == Anthropic && r.Header.Get("Anthropic-Version") == "" {
		s.apiError(w, http.StatusBadRequest, "", "anthropic-version header is required")
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		s.listModels(w)
	case r.Method == http.MethodPost && s.API == OpenAI && r.URL.Path == "/v1/chat/completions",
		r.Method == http.MethodPost && s.API == Anthropic && r.URL.Path == "/v1/messages":
		s.chat(w, r, req)
	default:
		s.apiError(w, http.StatusNotFound, "", "no route "+r.Method+" "+r.URL.Path)
	}
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request, req *Request) {
	reply := s.next()
	if reply.Answer != nil {
		reply = reply.Answer(req)
	}
	if reply.Model == "" {
		reply.Model = req.Model
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		if reply.RetryAfter != "" {
			w.Header().Set("Retry-After", reply.RetryAfter)
		}
		s.apiError(w, reply.Status, "", fmt.Sprintf("scripted failure %d", reply.Status))
		return
	}
	if !req.Stream {
		if !s.wait(r, req, reply.Delay) {
			return
		}
		b := s.whole(reply)
		switch {
		case reply.Malformed:
			b = b[:len(b)/2]
		case reply.Cut:
			w.Header().Set("Content-Length", fmt.Sprint(len(b)))
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(b[:len(b)/2])
			s.cut(w)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flush(w)
	if !s.wait(r, req, reply.Delay) {
		return
	}
	events, malformed := s.events(reply, req)
	for i, ev := range events {
		if _, err := io.WriteString(w, ev); err != nil {
			close(req.aborted)
			return
		}
		flush(w)
		if i == firstDelta(s.API) && reply.AfterFirst != nil {
			reply.AfterFirst()
		}
		if i == firstDelta(s.API) && reply.Fault != (Fault{}) {
			if reply.ErrorEvent {
				_, _ = io.WriteString(w, s.errorEvent())
				flush(w)
				return
			}
			if reply.Malformed {
				_, _ = io.WriteString(w, malformed)
				flush(w)
				return
			}
			s.cut(w)
			return
		}
	}
}

// errorEvent is the API's error in the middle of a stream.
func (s *Server) errorEvent() string {
	if s.API == OpenAI {
		return "data: " + mustJSON(map[string]any{"error": map[string]any{"message": "the fake is overloaded", "type": "server_error"}}) + "\n\n"
	}
	return "event: error\ndata: " + mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "the fake is overloaded"}}) + "\n\n"
}

// wait holds the reply back for d; false when the client went away (or
// the server closed) meanwhile.
func (s *Server) wait(r *http.Request, req *Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		close(req.aborted)
	case <-s.quit:
	}
	return false
}

// cut closes the connection under a reply that is not complete.
func (s *Server) cut(w http.ResponseWriter) {
	flush(w)
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			_ = c.Close()
		}
	}
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// firstDelta is the index of the first delta event of a stream: OpenAI's
// first chunk is the role, Anthropic's message_start, ping and the first
// content_block_start come before.
func firstDelta(api API) int {
	if api == Anthropic {
		return 3
	}
	return 1
}

func (s *Server) listModels(w http.ResponseWriter) {
	s.mu.Lock()
	models := append([]string(nil), s.models...)
	s.mu.Unlock()
	data := make([]map[string]any, len(models))
	var body map[string]any
	if s.API == OpenAI {
		for i, m := range models {
			data[i] = map[string]any{"id": m, "object": "model", "created": 1700000000, "owned_by": "providertest"}
		}
		body = map[string]any{"object": "list", "data": data}
	} else {
		for i, m := range models {
			data[i] = map[string]any{"type": "model", "id": m, "display_name": m, "created_at": "2026-01-01T00:00:00Z"}
		}
		body = map[string]any{"data": data, "has_more": false, "first_id": first(models), "last_id": last(models)}
	}
	writeJSON(w, http.StatusOK, body)
}

func first(s []string) any {
	if len(s) == 0 {
		return nil
	}
	return s[0]
}

func last(s []string) any {
	if len(s) == 0 {
		return nil
	}
	return s[len(s)-1]
}

// apiError writes an error reply in the API's shape.
func (s *Server) apiError(w http.ResponseWriter, status int, typ, msg string) {
	if s.API == OpenAI {
		if typ == "" {
			typ = map[int]string{401: "invalid_request_error", 429: "rate_limit_exceeded", 404: "invalid_request_error"}[status]
			if typ == "" {
				typ = "server_error"
			}
		}
		writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
		return
	}
	if typ == "" {
		typ = map[int]string{400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"}[status]
		if typ == "" {
			typ = "api_error"
		}
	}
	w.Header().Set("Request-Id", "req_fake")
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func mustJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(buf.String(), "\n")
}
