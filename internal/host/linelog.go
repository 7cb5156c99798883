package host

import (
	"bytes"
	"fmt"
	"strings"
	"sync"

	"go.uber.org/zap"
)

// maxLine bounds a buffered guest output line; longer ones are split.
const maxLine = 16 << 10

// lineLogger turns a guest's stdout or stderr into log lines carrying the
// agent's name.
type lineLogger struct {
	log    *zap.Logger
	stream string
	limit  *logLimiter // nil: unlimited

	mu  sync.Mutex
	buf []byte
}

func newLineLogger(log *zap.Logger, stream string) *lineLogger {
	return &lineLogger{log: log, stream: stream}
}

// Write logs every complete line of p and keeps the rest for later.
func (w *lineLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) >= maxLine {
				w.emit(w.buf[:maxLine])
				w.buf = w.buf[maxLine:]
				continue
			}
			break
		}
		w.emit(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) == 0 {
		w.buf = nil
	}
	return len(p), nil
}

// Flush logs a last unterminated line.
func (w *lineLogger) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = nil
	}
}

func (w *lineLogger) emit(line []byte) {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if !w.limit.allow() {
		return
	}
	w.log.Info(guestText(string(line)), zap.String("stream", w.stream))
}

// guestText makes guest-supplied text safe as a log message: control
// characters (a newline that would forge another log line, terminal escapes)
// are shown as \uXXXX; tabs stay.
func guestText(s string) string {
	clean := true
	for _, r := range s {
		if r < 0x20 && r != '\t' || r == 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 && r != '\t' || r == 0x7f {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
