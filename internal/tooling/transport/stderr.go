package transport

import (
	"bytes"
	"sync"

	"go.uber.org/zap"
)

// LineLogger writes a server's stderr to the log, one entry a line.
type LineLogger struct {
	Log  *zap.Logger
	mu   sync.Mutex
	buf  []byte
	last []byte // the last line, for the error of a server that exits
}

const maxStderrLine = 64 << 10

func (l *LineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			if len(l.buf) > maxStderrLine {
				l.emit(l.buf)
				l.buf = l.buf[:0]
			}
			return len(p), nil
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
}

func (l *LineLogger) emit(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(line) == 0 {
		return
	}
	l.Log.Info("server stderr", zap.ByteString("line", line))
	l.last = append(l.last[:0], truncate(line, 300)...)
}

// lastLine returns the last line written (partial lines included).
func (l *LineLogger) lastLine() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := bytes.TrimSpace(l.buf); len(s) > 0 {
		return string(truncate(s, 300))
	}
	return string(l.last)
}

func (l *LineLogger) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.emit(l.buf)
	l.buf = nil
}
