package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Sentinels callers may test for with errors.Is.
var (
	// ErrUnknownKind: Open was given a kind it has no implementation of.
	ErrUnknownKind = errors.New("unknown provider kind")
	// errIncomplete: a stream ended (cleanly, at the HTTP level) before
	// its terminal event.
	errIncomplete = errors.New("the stream ended before the response was complete")
	// errProtocol marks a response the kind could not make sense of.
	errProtocol = errors.New("malformed response")
)

// maxAPIMessage bounds the part of an API's error message an error keeps.
const maxAPIMessage = 300

// apiFailure is what a kind knows of a failed HTTP exchange: the status
// (0: none came) and the API's own error message.
type apiFailure struct {
	status  int
	message string
}

// fail turns a request's error into the contract's *tooling.Error. ctx is
// the caller's context (its end is cancelled or timeout whatever the SDK
// says); api is set when the API answered with an error status; every
// secret of rs is replaced in the text.
func (b *base) fail(ctx context.Context, err error, api *apiFailure, rs []tooling.Redaction) error {
	te := b.classify(ctx, err, api)
	te.Message = tooling.Redact(errors.New(te.Message), rs).Error()
	return te
}

func (b *base) classify(ctx context.Context, err error, api *apiFailure) *tooling.Error {
	name := b.name
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return tooling.Errorf(tooling.CodeCancelled, "provider %q: the request was cancelled", name)
	case ctx.Err() != nil:
		return tooling.Errorf(tooling.CodeTimeout, "provider %q: no answer before the caller's deadline", name)
	case errors.Is(err, context.DeadlineExceeded):
		return tooling.Errorf(tooling.CodeTimeout, "provider %q: no answer within provider.%s.timeout (%s)", name, name, b.cfg.Timeout.Duration)
	case errors.Is(err, context.Canceled):
		return tooling.Errorf(tooling.CodeCancelled, "provider %q: the request was cancelled", name)
	}
	var te *tooling.Error
	if errors.As(err, &te) {
		return te
	}
	if api != nil && api.status != 0 {
		return b.statusError(api)
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, errProtocol), errors.As(err, &syn), errors.As(err, &typ),
		// Both SDKs' words for a whole body they could not decode (its
		// reading failed otherwise: "error reading response body").
		strings.HasPrefix(err.Error(), "error parsing response json"):
		return tooling.Errorf(tooling.CodeProtocol, "provider %q: malformed response: %w", name, err)
	case errors.Is(err, errIncomplete):
		return tooling.Errorf(tooling.CodeUnavailable, "provider %q: %w", name, err)
	}
	return tooling.Errorf(tooling.CodeUnavailable, "provider %q: %w", name, err)
}

// statusError maps an HTTP error status the SDK gave up on.
func (b *base) statusError(api *apiFailure) *tooling.Error {
	name, s := b.name, api.status
	detail := ""
	if m := clip(api.message); m != "" {
		detail = ": " + m
	}
	retries := ""
	if n := b.cfg.MaxRetries; n > 0 {
		retries = fmt.Sprintf(" after %d %s", n, plural(n, "retry", "retries"))
	}
	switch {
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		b.forgetKey() // the key file may have been rotated meanwhile
		key := fmt.Sprintf("check provider.%s.api_key", name)
		if b.src.APIKey == "" {
			key = fmt.Sprintf("provider.%s.api_key is not set", name)
		}
		return tooling.Errorf(tooling.CodeDenied, "provider %q refused the credentials (HTTP %d %s): %s", name, s, http.StatusText(s), key)
	case s == http.StatusTooManyRequests:
		return tooling.Errorf(tooling.CodeBusy, "provider %q is rate limiting (HTTP 429)%s%s", name, retries, detail)
	case s >= 500:
		return tooling.Errorf(tooling.CodeUnavailable, "provider %q failed (HTTP %d %s)%s%s", name, s, http.StatusText(s), retries, detail)
	case s == http.StatusNotFound:
		return tooling.Errorf(tooling.CodeNotFound, "provider %q: HTTP 404 Not Found%s", name, detail)
	case s == http.StatusBadRequest || s == http.StatusUnprocessableEntity || s == http.StatusRequestEntityTooLarge:
		return tooling.Errorf(tooling.CodeInvalidArgument, "provider %q rejected the request (HTTP %d %s)%s", name, s, http.StatusText(s), detail)
	}
	return tooling.Errorf(tooling.CodeUnavailable, "provider %q: HTTP %d %s%s", name, s, http.StatusText(s), detail)
}

// clip shortens an API's message to one line of at most maxAPIMessage bytes.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxAPIMessage {
		return s
	}
	cut := maxAPIMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
