package transport

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.uber.org/zap"
)

// MessageLimit enforces max_message_bytes on what HTTP servers send: a
// JSON body or an SSE event whose message is over the limit is replaced by
// an error response for the request it answers (or dropped), so that it
// fails that request alone instead of the session (go-sdk fails the whole
// connection on an oversized event).
type MessageLimit struct {
	Max     int64
	Tooling string
	Log     *zap.Logger
}

// tooLarge is the error response standing for a message of size bytes,
// nil when there is no request of ours to answer.
func (l *MessageLimit) tooLarge(size int64, scan *topLevelScan) []byte {
	id, ok := scan.requestID()
	l.Log.Warn("skipping a message over max_message_bytes", zap.Int64("bytes", size),
		zap.Int64("max_message_bytes", l.Max), zap.Bool("has_id", ok), zap.Bool("request", scan.hasMethod))
	if !ok || scan.hasMethod {
		return nil
	}
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: CodeMessageTooLarge, Message: tooLargeMessage(size, l.Max, l.Tooling)}})
	if err != nil {
		return nil
	}
	return b
}

func tooLargeMessage(size, max int64, tooling string) string {
	return fmt.Sprintf("the server sent a message of %d bytes, over this tooling's max_message_bytes (%d): raise max_message_bytes in [tooling.%s]",
		size, max, tooling)
}

// wrap limits resp's body by its content type.
func (l *MessageLimit) wrap(resp *http.Response) {
	if l == nil || resp.Body == nil {
		return
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		resp.Body = &jsonLimitBody{l: l, body: resp.Body}
		resp.ContentLength = -1
	case "text/event-stream":
		resp.Body = &sseLimitBody{l: l, body: resp.Body, r: bufio.NewReaderSize(resp.Body, 64<<10)}
	}
}

// jsonLimitBody is a JSON-RPC response body: read whole up to the limit,
// else replaced by an error response.
type jsonLimitBody struct {
	l    *MessageLimit
	body io.ReadCloser
	out  *bytes.Reader
	err  error
}

func (b *jsonLimitBody) Read(p []byte) (int, error) {
	if b.out == nil && b.err == nil {
		b.fill()
	}
	if b.out == nil {
		return 0, b.err
	}
	return b.out.Read(p)
}

func (b *jsonLimitBody) fill() {
	data, err := io.ReadAll(io.LimitReader(b.body, b.l.Max+1))
	if err != nil {
		b.err = err
		return
	}
	if int64(len(data)) <= b.l.Max {
		b.out = bytes.NewReader(data)
		return
	}
	var scan topLevelScan
	scan.feed(data)
	rest, err := io.Copy(scanWriter{&scan}, b.body)
	if err != nil {
		b.err = err
		return
	}
	resp := b.l.tooLarge(int64(len(data))+rest, &scan)
	if resp == nil {
		b.err = errors.New("a message over max_message_bytes that answers no request")
		return
	}
	b.out = bytes.NewReader(resp)
}

func (b *jsonLimitBody) Close() error { return b.body.Close() }

type scanWriter struct{ s *topLevelScan }

func (w scanWriter) Write(p []byte) (int, error) { w.s.feed(p); return len(p), nil }

// sseLimitBody is an event stream whose events carry at most the limit of
// data: an event over it is replaced by one carrying the error response
// (its other fields, such as its id, kept), or dropped.
type sseLimitBody struct {
	l    *MessageLimit
	body io.ReadCloser
	r    *bufio.Reader
	out  bytes.Buffer
	err  error

	// The event being read.
	fields    [][]byte // its lines other than data, as read
	dataLines int
	data      []byte // its data lines' values joined by \n (while not over)
	size      int64  // bytes of data so far
	over      bool
	scan      topLevelScan
}

func (b *sseLimitBody) Close() error { return b.body.Close() }

func (b *sseLimitBody) Read(p []byte) (int, error) {
	for b.out.Len() == 0 {
		if b.err != nil {
			return 0, b.err
		}
		b.err = b.step()
	}
	return b.out.Read(p)
}

// step reads one line and handles it.
func (b *sseLimitBody) step() error {
	line, isData, err := b.readLine()
	if err != nil {
		b.endEvent() // a stream ending mid-event: pass on what it had
		return err
	}
	trimmed := bytes.TrimRight(line, "\r\n")
	switch {
	case isData:
		// handled by readLine (line is empty: not the event's end)
	case len(trimmed) == 0:
		b.out.Write(line)
		b.endEvent()
	default:
		b.fields = append(b.fields, bytes.Clone(line))
	}
	return nil
}

// readLine returns the next line; data lines are consumed into the event
// as they are read (a data line over the limit is never held whole) and
// come back empty with isData set.
func (b *sseLimitBody) readLine() (line []byte, isData bool, err error) {
	first := true
	var buf []byte
	for {
		frag, err := b.r.ReadSlice('\n')
		if first {
			first = false
			if bytes.HasPrefix(frag, []byte("data:")) {
				isData = true
				v := frag[len("data:"):]
				if len(v) > 0 && v[0] == ' ' {
					v = v[1:]
				}
				if b.dataLines > 0 {
					b.addData([]byte{'\n'})
				}
				b.dataLines++
				frag = v
			}
		}
		if isData {
			b.addData(bytes.TrimRight(frag, "\r\n"))
		} else if int64(len(buf)) <= b.l.Max {
			buf = append(buf, frag...)
		}
		switch {
		case err == nil:
			return buf, isData, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return buf, isData, err
		}
	}
}

func (b *sseLimitBody) addData(v []byte) {
	b.size += int64(len(v))
	if !b.over && b.size > b.l.Max {
		b.over = true
		b.scan.feed(b.data)
		b.data = nil
	}
	if b.over {
		b.scan.feed(v)
		return
	}
	b.data = append(b.data, v...)
}

// endEvent writes the event read (or its replacement) to out, in front of
// the blank line that ended it.
func (b *sseLimitBody) endEvent() {
	if len(b.fields) == 0 && b.dataLines == 0 {
		return
	}
	var ev bytes.Buffer
	for _, f := range b.fields {
		ev.Write(f)
	}
	data := b.data
	if b.over {
		data = b.l.tooLarge(b.size, &b.scan)
	}
	if b.dataLines > 0 && (data != nil || !b.over) {
		for _, l := range bytes.Split(data, []byte{'\n'}) {
			ev.WriteString("data: ")
			ev.Write(l)
			ev.WriteByte('\n')
		}
	}
	// out holds the event's terminating blank line (or nothing at the end
	// of the stream): the event goes in front of it.
	tail := bytes.Clone(b.out.Bytes())
	b.out.Reset()
	b.out.Write(ev.Bytes())
	b.out.Write(tail)
	b.fields, b.dataLines, b.data, b.size, b.over, b.scan = nil, 0, nil, 0, false, topLevelScan{}
}
