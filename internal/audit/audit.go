// Package audit is the audit log: one JSON object per line for every tool
// call, resource read, (un)subscription and model request of every agent
// and every denial, written to a file opened append-only with mode 0600 (or to
// stderr) by one goroutine behind a bounded buffer, so that the call path
// never waits on the disk: a full buffer drops the line and counts it.
// Reopen (on SIGHUP) reopens the file for logrotate.
package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Ops, as written in the op field.
const (
	OpGet                     = "get" // tooling.get of a tooling not granted (denials only)
	OpCallTool                = "call-tool"
	OpCallToolBlocking        = "call-tool-blocking"
	OpReadResource            = "read-resource"
	OpSubscribeResource       = "subscribe-resource"
	OpUnsubscribeResource     = "unsubscribe-resource"
	OpSubscribeResourceList   = "subscribe-resource-list"
	OpUnsubscribeResourceList = "unsubscribe-resource-list"
	OpGetProvider             = "get-provider" // provider.get of a provider not granted (denials only)
	OpChat                    = "chat"
	OpChatStream              = "chat-stream"
	OpSampling                = "sampling" // a tooling's server's sampling/createMessage, answered by a provider
	OpMessage                 = "message"  // a message to an agent, accepted and answered or refused
)

// Outcomes besides the error codes.
const (
	OutcomeOK        = "ok"
	OutcomeToolError = "tool-error"
)

// DefaultBuffer is how many lines wait for the writer before new ones are
// dropped.
const DefaultBuffer = 4096

// Record is one audited operation: who did what, how it ended, and what
// the operation was (a call, a model request, a message), each in its own
// group; fields read and write through the groups (r.Tool, r.Model).
type Record struct {
	Time     time.Time
	Agent    string
	Tooling  string
	Op       string
	Outcome  string // ok, tool-error or an error code
	Message  string // the error's message, for outcomes other than ok
	Duration time.Duration
	// WithArgs writes the text of the arguments, the request and the
	// content, not only their size and sha256.
	WithArgs bool

	Call
	ModelRequest
	AgentMessage
	Trace
}

// Call is what a tool call or resource operation was called with.
type Call struct {
	Tool   string // tool calls
	URI    string // resource operations
	CallID string
	SubID  string
	// Args are the call's arguments (JSON text): their size and sha256
	// are written, their text only with WithArgs.
	Args    string
	HasArgs bool
}

// ModelRequest is a model request (chat, chat-stream, sampling): the
// provider, the model (that answered, else asked for), the time to the
// first delta (a message's too), the usage, and the request as JSON text:
// its size and sha256 are written, the text (the messages) only with
// WithArgs.
type ModelRequest struct {
	Provider      string
	Model         string
	FirstToken    time.Duration
	HasFirstToken bool
	InputTokens   uint32
	OutputTokens  uint32
	HasUsage      bool
	Request       []byte
	HasRequest    bool
	StreamID      string
	// Reissued: a durable instance's replay made the request again, its
	// first making cut off by a restart (its tokens are counted again).
	Reissued bool
}

// AgentMessage is a message to an agent (op message): who sent it, its
// id, session and instance, and its content: size and sha256 written, the
// text only with WithArgs.
type AgentMessage struct {
	Sender     string
	MessageID  string
	Session    string
	Instance   string
	Content    string
	HasContent bool
}

// Trace names the operation's span (hex), "" when not traced: a line and
// its trace find each other.
type Trace struct {
	TraceID, SpanID string
}

// line is a Record as written. Its groups are embedded in the order of
// the keys, which encoding/json writes flat.
type line struct {
	lineOp
	lineCall
	Outcome    string      `json:"outcome"`
	Message    string      `json:"message,omitempty"`
	DurationMS json.Number `json:"duration_ms"`
	lineArgs
	lineModel
	lineMessage
	lineTrace
}

// lineOp is a line's who, when and which operation.
type lineOp struct {
	Time     string `json:"time"`
	Agent    string `json:"agent"`
	Tooling  string `json:"tooling,omitempty"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	Op       string `json:"op"`
}

// lineCall is what a line's operation was made on.
type lineCall struct {
	Tool     string `json:"tool,omitempty"`
	URI      string `json:"uri,omitempty"`
	CallID   string `json:"call_id,omitempty"`
	SubID    string `json:"sub_id,omitempty"`
	StreamID string `json:"stream_id,omitempty"`
	Reissued bool   `json:"reissued,omitempty"`
}

// lineArgs is a line's arguments: size, sha256 and (WithArgs) text.
type lineArgs struct {
	ArgsBytes  *int            `json:"args_bytes,omitempty"`
	ArgsSHA256 string          `json:"args_sha256,omitempty"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
}

// lineModel is a line's model request: first token, usage and request.
type lineModel struct {
	FirstMS   json.Number     `json:"first_token_ms,omitempty"`
	InTokens  *uint32         `json:"input_tokens,omitempty"`
	OutTokens *uint32         `json:"output_tokens,omitempty"`
	ReqBytes  *int            `json:"request_bytes,omitempty"`
	ReqSHA256 string          `json:"request_sha256,omitempty"`
	Req       json.RawMessage `json:"request,omitempty"`
}

// lineMessage is a line's message to an agent.
type lineMessage struct {
	Sender     string  `json:"sender,omitempty"`
	MessageID  string  `json:"message_id,omitempty"`
	Session    string  `json:"session,omitempty"`
	Instance   string  `json:"instance,omitempty"`
	ContBytes  *int    `json:"content_bytes,omitempty"`
	ContSHA256 string  `json:"content_sha256,omitempty"`
	Content    *string `json:"content,omitempty"`
}

// lineTrace is a line's span.
type lineTrace struct {
	TraceID string `json:"trace_id,omitempty"`
	SpanID  string `json:"span_id,omitempty"`
}

func millis(d time.Duration) json.Number {
	return json.Number(strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', -1, 64))
}

// Encode is the JSON line of r, newline included.
func Encode(r Record) []byte {
	l := line{
		lineOp: lineOp{Time: r.Time.UTC().Format(time.RFC3339Nano), Agent: r.Agent, Tooling: r.Tooling,
			Provider: r.Provider, Model: r.Model, Op: r.Op},
		lineCall: lineCall{Tool: r.Tool, URI: r.URI, CallID: r.CallID, SubID: r.SubID, StreamID: r.StreamID,
			Reissued: r.Reissued},
		Outcome: r.Outcome, Message: r.Message, DurationMS: millis(r.Duration),
	}
	if r.HasFirstToken {
		l.FirstMS = millis(r.FirstToken)
	}
	if r.HasUsage {
		in, out := r.InputTokens, r.OutputTokens
		l.InTokens, l.OutTokens = &in, &out
	}
	if r.HasRequest {
		n := len(r.Request)
		sum := sha256.Sum256(r.Request)
		l.ReqBytes, l.ReqSHA256 = &n, hex.EncodeToString(sum[:])
		if r.WithArgs && json.Valid(r.Request) {
			l.Req = json.RawMessage(r.Request)
		}
	}
	if r.HasArgs {
		n := len(r.Args)
		sum := sha256.Sum256([]byte(r.Args))
		l.ArgsBytes, l.ArgsSHA256 = &n, hex.EncodeToString(sum[:])
		if r.WithArgs && json.Valid([]byte(r.Args)) {
			l.Arguments = json.RawMessage(r.Args)
		}
	}
	if r.HasContent {
		n := len(r.Content)
		sum := sha256.Sum256([]byte(r.Content))
		l.ContBytes, l.ContSHA256 = &n, hex.EncodeToString(sum[:])
		if r.WithArgs {
			c := r.Content
			l.Content = &c
		}
	}
	l.Sender, l.MessageID, l.Session, l.Instance = r.Sender, r.MessageID, r.Session, r.Instance
	l.TraceID, l.SpanID = r.TraceID, r.SpanID
	b, err := json.Marshal(l)
	if err != nil { // cannot happen: every field is a plain value
		b = fmt.Appendf(nil, `{"time":%q,"outcome":"internal","message":%q}`, l.Time, err.Error())
	}
	return append(b, '\n')
}

// Log is an open audit log. A nil *Log records nothing.
type Log struct {
	path string // "" for stderr
	ch   chan []byte

	mu sync.Mutex // guards f and w (the writer and Reopen)
	f  *os.File   // nil for stderr
	w  io.Writer

	dropped atomic.Int64
	written atomic.Int64
	reopen  chan chan error
}

// Open opens path ("-": stderr) append-only, creating it with mode 0600,
// with a buffer of n lines (0: DefaultBuffer). Run writes the lines.
func Open(path string, n int) (*Log, error) {
	if n <= 0 {
		n = DefaultBuffer
	}
	l := &Log{ch: make(chan []byte, n), reopen: make(chan chan error)}
	if path == "-" {
		l.w = os.Stderr
		return l, nil
	}
	l.path = path
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	l.f, l.w = f, f
	return l, nil
}

func openFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the audit log: %w", err)
	}
	return f, nil
}

// Write queues r without waiting: when the buffer is full the line is
// dropped and counted (Dropped).
func (l *Log) Write(r Record) {
	if l == nil {
		return
	}
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	select {
	case l.ch <- Encode(r):
	default:
		l.dropped.Add(1)
	}
}

// Dropped is how many lines a full buffer has dropped.
func (l *Log) Dropped() int64 {
	if l == nil {
		return 0
	}
	return l.dropped.Load()
}

// Written is how many lines have been written.
func (l *Log) Written() int64 {
	if l == nil {
		return 0
	}
	return l.written.Load()
}

// Run writes queued lines until ctx ends, then writes what is still
// queued and closes the file.
func (l *Log) Run(ctx context.Context) {
	defer l.close()
	for {
		select {
		case b := <-l.ch:
			l.put(b)
		case done := <-l.reopen:
			done <- l.doReopen()
		case <-ctx.Done():
			for {
				select {
				case b := <-l.ch:
					l.put(b)
				default:
					return
				}
			}
		}
	}
}

func (l *Log) put(b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.w.Write(b); err == nil {
		l.written.Add(1)
	} else {
		l.dropped.Add(1)
	}
}

// Reopen closes and reopens the file (after logrotate moved it), after the
// lines queued so far; a no-op for stderr. It waits for Run, up to ctx.
func (l *Log) Reopen(ctx context.Context) error {
	if l == nil || l.path == "" {
		return nil
	}
	done := make(chan error, 1)
	select {
	case l.reopen <- done:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *Log) doReopen() error {
	// What was queued before the reopen goes to the old file.
	for n := len(l.ch); n > 0; n-- {
		l.put(<-l.ch)
	}
	f, err := openFile(l.path)
	if err != nil {
		return err // keep writing to the old file
	}
	l.mu.Lock()
	old := l.f
	l.f, l.w = f, f
	l.mu.Unlock()
	return old.Close()
}

func (l *Log) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
		l.w = io.Discard
	}
}

// Close closes the file of a Log that Run has not closed (one never run).
func (l *Log) Close() {
	if l != nil {
		l.close()
	}
}
