package toolhost

import (
	"fmt"
	"runtime"
)

// Level is the WIT enum level of the host's log.
type Level uint8

// The log levels, in WIT order.
const (
	LevelDebug Level = iota
	LevelInfo
	LevelWarn
	LevelError
)

// String is the WIT name of the level.
func (l Level) String() string {
	switch l {
	case LevelDebug:
		return "debug"
	case LevelInfo:
		return "info"
	case LevelWarn:
		return "warn"
	case LevelError:
		return "error"
	}
	return fmt.Sprintf("level(%d)", uint8(l))
}

// Log writes message to the host's structured log, tagged with the agent's
// name. A level outside the four is logged as error; invalid UTF-8 in
// message is replaced by U+FFFD (the canonical ABI carries only valid
// UTF-8).
func Log(level Level, message string) {
	if level > LevelError {
		level = LevelError
	}
	message = sanitize(message)
	lock()
	defer unlock()
	p, n := stringArg(message)
	rawLogWrite(uint32(level), p, n)
	runtime.KeepAlive(message)
}

// Logf is Log with fmt.Sprintf.
func Logf(level Level, format string, args ...any) { Log(level, fmt.Sprintf(format, args...)) }
