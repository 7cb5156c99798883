package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// CodeMessageTooLarge is the JSON-RPC error code of the answer made up for
// a response over max_message_bytes (an implementation-defined server
// error code, never sent by a server we know).
const CodeMessageTooLarge = -32090

// Command runs a server command and speaks newline-delimited
// JSON-RPC with it over its stdin and stdout. Unlike go-sdk's
// CommandTransport, one bad line does not end the session: a line that is
// not JSON-RPC is logged and skipped, and a message over maxMessage bytes
// is skipped too (a response to one of ours becomes an error response for
// that request alone).
type Command struct {
	Cmd        *exec.Cmd
	Terminate  time.Duration // each escalation step of Close
	MaxMessage int64
	Tooling    string
	Log        *zap.Logger
	Track      *Tracker
	Stderr     *LineLogger // nil: not captured
}

func (t *Command) Connect(context.Context) (mcp.Connection, error) {
	// Own pipes rather than StdoutPipe/StdinPipe: Wait closes those, racing
	// the reads of what the server wrote before it exited.
	stdout, childOut, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	childIn, stdin, err := os.Pipe()
	if err != nil {
		stdout.Close()
		childOut.Close()
		return nil, err
	}
	t.Cmd.Stdout, t.Cmd.Stdin = childOut, childIn
	err = t.Cmd.Start()
	childOut.Close()
	childIn.Close()
	if err != nil {
		stdout.Close()
		stdin.Close()
		return nil, err
	}
	c := &stdioConn{
		t:        t,
		stdin:    stdin,
		stdout:   stdout,
		incoming: make(chan msgOrErr),
		closed:   make(chan struct{}),
		exited:   make(chan struct{}),
		warn:     &rateLimitedWarn{log: t.Log, every: 10 * time.Second, burst: 5},
	}
	go func() {
		c.exitErr = t.Cmd.Wait()
		close(c.exited)
	}()
	go c.readLoop(bufio.NewReaderSize(stdout, 64<<10))
	return c, nil
}

type msgOrErr struct {
	msg jsonrpc.Message
	err error
}

// stdioConn is one server process's connection.
type stdioConn struct {
	t        *Command
	stdin    io.WriteCloser
	stdout   io.Closer
	writeMu  sync.Mutex
	incoming chan msgOrErr
	queue    []jsonrpc.Message // the rest of a batch; Read is not concurrent
	warn     *rateLimitedWarn

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
	exited    chan struct{} // the process was waited for
	exitErr   error
}

func (c *stdioConn) SessionID() string { return "" }

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case v := <-c.incoming:
		if v.err != nil {
			return nil, v.err
		}
		return v.msg, nil
	}
}

func (c *stdioConn) Write(_ context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a message: %w", err)
	}
	data = append(data, '\n')
	c.writeMu.Lock()
	_, err = c.stdin.Write(data)
	c.writeMu.Unlock()
	if err != nil {
		select {
		case <-c.closed:
		default:
			err = c.exitReason(err)
		}
	}
	if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() && req.Method == MethodCancelled {
		c.t.Track.NoticeWritten()
	}
	return err
}

// Close closes the server's stdin, then waits for it to exit, escalating to
// SIGTERM and SIGKILL after each terminate duration, then closes its
// stdout.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		if err := c.stdin.Close(); err != nil && !errors.Is(err, io.ErrClosedPipe) {
			c.closeErr = fmt.Errorf("closing stdin: %w", err)
		}
		// Last, stdout: that also ends the reader if something the server
		// started still holds the pipe.
		defer c.stdout.Close()
		wait := func() bool {
			select {
			case <-c.exited:
				return true
			case <-time.After(c.t.Terminate):
				return false
			}
		}
		if wait() {
			return
		}
		if c.t.Cmd.Process.Signal(syscall.SIGTERM) == nil && wait() {
			return
		}
		_ = c.t.Cmd.Process.Kill()
		if !wait() {
			c.closeErr = errors.New("unresponsive server process")
		}
	})
	return c.closeErr
}

// exitReason is err (stdout ended, stdin broken) with how the process
// ended and its last stderr line, when it has ended (it usually has).
func (c *stdioConn) exitReason(err error) error {
	select {
	case <-c.exited:
	case <-time.After(100 * time.Millisecond):
		return err
	}
	if c.exitErr != nil {
		err = fmt.Errorf("server exited: %w (%w)", c.exitErr, err)
	} else {
		err = fmt.Errorf("server exited: %w", err)
	}
	if c.t.Stderr != nil {
		if line := c.t.Stderr.lastLine(); line != "" {
			err = fmt.Errorf("%w; its last stderr line: %q", err, line)
		}
	}
	return err
}

// readLoop turns stdout lines into messages until stdout ends.
func (c *stdioConn) readLoop(r *bufio.Reader) {
	for {
		msgs, err := c.nextMessages(r)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = c.exitReason(io.EOF)
			}
			select {
			case c.incoming <- msgOrErr{err: err}:
			case <-c.closed:
			}
			return
		}
		for _, m := range msgs {
			select {
			case c.incoming <- msgOrErr{msg: m}:
			case <-c.closed:
				return
			}
		}
	}
}

// nextMessages reads lines until one yields messages (nil error) or stdout
// ends. A line over the limit is never held in memory whole.
func (c *stdioConn) nextMessages(r *bufio.Reader) ([]jsonrpc.Message, error) {
	limit := c.t.MaxMessage
	var buf []byte
	for {
		buf = buf[:0]
		var (
			size int64
			over bool
			scan topLevelScan
		)
		for {
			frag, err := r.ReadSlice('\n')
			size += int64(len(frag))
			if !over && int64(len(buf)+len(frag)) > limit+2 { // + "\r\n"
				over = true
				scan.feed(buf)
				buf = buf[:0]
			}
			if over {
				scan.feed(frag)
			} else {
				buf = append(buf, frag...)
			}
			if err == nil {
				break
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			return nil, err // a partial last line is dropped
		}
		if over {
			size-- // the newline
			if m := c.oversized(size, &scan); m != nil {
				return []jsonrpc.Message{m}, nil
			}
			continue
		}
		line := bytes.TrimSpace(buf)
		if len(line) == 0 {
			continue
		}
		if int64(len(line)) > limit {
			// Within limit+2 only because of surrounding space.
			scan.feed(line)
			if m := c.oversized(int64(len(line)), &scan); m != nil {
				return []jsonrpc.Message{m}, nil
			}
			continue
		}
		msgs, err := decodeLine(line)
		if err != nil {
			c.warn.warn("skipping a line of the server's stdout that is not JSON-RPC",
				zap.ByteString("line", truncate(line, 200)), zap.Int("bytes", len(line)), zap.NamedError("reason", err))
			continue
		}
		if cap(buf) > 1<<20 {
			buf = nil // do not keep a large buffer for the session's life
		}
		return msgs, nil
	}
}

// oversized handles a message over the limit: a response to one of our
// requests becomes an error response for that request; a request from the
// server is answered with an error; anything else is dropped.
func (c *stdioConn) oversized(size int64, scan *topLevelScan) jsonrpc.Message {
	id, idOK := scan.requestID()
	msg := fmt.Sprintf("the server sent a message of %d bytes, over this tooling's max_message_bytes (%d): raise max_message_bytes in [tooling.%s]",
		size, c.t.MaxMessage, c.t.Tooling)
	c.t.Log.Warn("skipping a message over max_message_bytes", zap.Int64("bytes", size),
		zap.Int64("max_message_bytes", c.t.MaxMessage), zap.Bool("has_id", idOK), zap.Bool("request", scan.hasMethod))
	if !idOK {
		return nil
	}
	werr := &jsonrpc.Error{Code: CodeMessageTooLarge, Message: msg}
	if scan.hasMethod {
		// A request from the server: tell it, and go on reading.
		go func() {
			resp := &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "request too large for the client"}}
			_ = c.Write(context.Background(), resp)
		}()
		return nil
	}
	return &jsonrpc.Response{ID: id, Error: werr}
}

// decodeLine decodes one line: a message or a batch of them.
func decodeLine(line []byte) ([]jsonrpc.Message, error) {
	switch line[0] {
	case '{':
		m, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			return nil, err
		}
		return []jsonrpc.Message{m}, nil
	case '[':
		var raws []json.RawMessage
		if err := json.Unmarshal(line, &raws); err != nil {
			return nil, err
		}
		if len(raws) == 0 {
			return nil, errors.New("empty batch")
		}
		out := make([]jsonrpc.Message, 0, len(raws))
		for _, raw := range raws {
			m, err := jsonrpc.DecodeMessage(raw)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
		}
		return out, nil
	}
	return nil, errors.New("not a JSON object")
}

func truncate(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return append(b[:n:n], "…"...)
}

// topLevelScan finds the "id" and "method" members of a JSON object fed to
// it in pieces, without keeping the object: enough to answer for a message
// too large to decode.
type topLevelScan struct {
	depth     int
	inStr     bool
	esc       bool
	strIsKey  bool
	key       []byte
	lastKey   string
	inValue   bool // at depth 1, between ':' and ',' or '}'
	capture   bool // reading the value of "id"
	id        []byte
	idDone    bool
	hasMethod bool
}

const maxScanID = 256

func (s *topLevelScan) feed(p []byte) {
	for _, b := range p {
		if s.inStr {
			if s.capture && len(s.id) < maxScanID {
				s.id = append(s.id, b)
			}
			switch {
			case s.esc:
				s.esc = false
			case b == '\\':
				s.esc = true
			case b == '"':
				s.inStr = false
				if s.strIsKey {
					s.lastKey, s.strIsKey = string(s.key), false
				}
				continue
			}
			if s.strIsKey && len(s.key) < 16 {
				s.key = append(s.key, b)
			}
			continue
		}
		if s.capture {
			if s.depth == 1 && (b == ',' || b == '}') {
				s.capture, s.idDone = false, true
			} else if len(s.id) < maxScanID {
				s.id = append(s.id, b)
			}
		}
		switch b {
		case '"':
			s.inStr = true
			if s.depth == 1 && !s.inValue {
				s.strIsKey, s.key = true, s.key[:0]
			}
		case '{', '[':
			s.depth++
		case '}', ']':
			s.depth--
		case ':':
			if s.depth == 1 && !s.inValue {
				s.inValue = true
				switch s.lastKey {
				case "id":
					s.capture, s.id = true, s.id[:0]
				case "method":
					s.hasMethod = true
				}
			}
		case ',':
			if s.depth == 1 {
				s.inValue = false
			}
		}
	}
}

// requestID returns the scanned "id" member.
func (s *topLevelScan) requestID() (jsonrpc.ID, bool) {
	if !s.idDone {
		return jsonrpc.ID{}, false
	}
	var v any
	if err := json.Unmarshal(bytes.TrimSpace(s.id), &v); err != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil || !id.IsValid() {
		return jsonrpc.ID{}, false
	}
	return id, true
}

// rateLimitedWarn logs at most burst warnings per period, then one line
// saying how many it left out.
type rateLimitedWarn struct {
	log     *zap.Logger
	every   time.Duration
	burst   int
	mu      sync.Mutex
	start   time.Time
	n       int
	dropped int
}

func (w *rateLimitedWarn) warn(msg string, fields ...zap.Field) {
	w.mu.Lock()
	now := time.Now()
	if now.Sub(w.start) >= w.every {
		if w.dropped > 0 {
			w.log.Warn("more lines of the server's stdout that are not JSON-RPC were skipped", zap.Int("lines", w.dropped), zap.Duration("within", w.every))
		}
		w.start, w.n, w.dropped = now, 0, 0
	}
	w.n++
	if w.n > w.burst {
		w.dropped++
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	w.log.Warn(msg, fields...)
}
