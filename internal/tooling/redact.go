package tooling

import "strings"

// Redaction replaces a secret in error text by safe text: an expanded
// config value (a url or header that came from ${env:...} or
// ${file:...}), a client secret or a token.
type Redaction struct{ Secret, Shown string }

// redactedError is an error whose text had secrets replaced; the chain
// below it is kept for errors.Is and errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Redact returns err with every secret of rs replaced in its text, so that
// it can be logged, stored as the last error and shown to agents.
func Redact(err error, rs []Redaction) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	red := msg
	for _, r := range rs {
		red = strings.ReplaceAll(red, r.Secret, r.Shown)
	}
	if red == msg {
		return err
	}
	return &redactedError{msg: red, err: err}
}
