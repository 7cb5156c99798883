package config

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors callers may test for with errors.Is.
var (
	// ErrNoConfig: Resolve found no config file.
	ErrNoConfig = errors.New("no config file")
	// ErrUnsetVariable: a ${env:NAME} reference names an unset variable.
	ErrUnsetVariable = errors.New("environment variable is not set")
	// ErrBadReference: a ${...} reference is malformed.
	ErrBadReference = errors.New("malformed reference")
)

// Error is one problem in a config file, at a position and a key path.
type Error struct {
	File string // the config's name ("" when parsed without one)
	Line int    // 1-based; 0 when unknown
	Col  int    // 1-based byte column; 0 when unknown
	Key  string // the dotted key path, e.g. "tooling.fs.command"; "" for the document
	Msg  string
}

// Error formats e as "file:line:col: key.path: msg", leaving out the parts
// that are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(":")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:%d:", e.Line, e.Col)
	}
	if b.Len() > 0 {
		b.WriteString(" ")
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in one config file, in document order.
type Errors []*Error

// Error lists the problems, one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes each *Error to errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}
