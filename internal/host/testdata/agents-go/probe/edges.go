package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolhostd/toolhostd/sdk/go/toolhost"
)

// sdkEdges is the "sdk-edges" op, Go's own: the SDK's answers where the
// host would trap or where a handle is closed, against the tooling s.Name
// (the contract tests' in-process server with its echo tool). It returns
// one entry per check, for the host's test to compare.
func sdkEdges(s *step) (any, error) {
	out := map[string]any{}
	code := func(err error) string {
		var he *toolhost.HostError
		if errors.As(err, &he) {
			return he.Code.String()
		}
		if err == nil {
			return "ok"
		}
		return "other: " + err.Error()
	}
	out["get-invalid-utf8"] = code(func() error { _, err := toolhost.Get("bad\xff"); return err }())
	out["get-provider-invalid-utf8"] = code(func() error { _, err := toolhost.GetProvider("bad\xff"); return err }())
	t, err := toolhost.Get(s.Name)
	if err != nil {
		return nil, err
	}
	out["call-invalid-utf8-name"] = code(func() error { _, err := t.CallTool("echo\xc3", nil); return err }())
	out["call-invalid-utf8-json"] = code(func() error { _, err := t.CallToolBlocking("echo", "{\"text\":\"\xff\"}"); return err }())
	out["read-invalid-utf8-uri"] = code(func() error { _, err := t.ReadResource("test://\xff"); return err }())
	out["subscribe-invalid-utf8-uri"] = code(func() error { _, err := t.SubscribeResource("test://\xff"); return err }())
	toolhost.Log(toolhost.LevelInfo, "sdk-edges: invalid \xff UTF-8")
	out["log-invalid-utf8"] = true

	// Timeouts that must not wait forever (nothing is pending).
	_, ok := toolhost.Recv(-time.Millisecond)
	out["recv-negative"] = ok
	_, ok = toolhost.RecvDeadline(time.Now().Add(-time.Second))
	out["recv-deadline-past"] = ok
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	_, err = toolhost.RecvContext(ctx)
	cancel()
	out["recv-context-timeout"] = errors.Is(err, context.DeadlineExceeded)
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	_, err = toolhost.RecvContext(ctx)
	out["recv-context-cancel"] = errors.Is(err, context.Canceled)

	// Results too large for the region (8 MiB at first). What counts is
	// the whole result, the tool-result's arguments too: JSON text padded
	// with whitespace is the host's to return as it was given, and the
	// server gets it compact, so the result is large but the call cheap.
	padded := func(text string, n int) string { return `{"text":"` + text + `"` + strings.Repeat(" ", n) + `}` }
	big := padded("envelope", 9<<20)
	id, err := t.CallTool("echo", big)
	if err != nil {
		return nil, err
	}
	// An envelope: an error event under its id.
	env, ok := toolhost.Recv(30 * time.Second)
	ev, isErr := env.Event.(toolhost.ErrorEvent)
	switch {
	case ok && isErr && env.ID == id && ev.Err.Code == toolhost.Internal && errors.Is(ev.Err, toolhost.ErrTooLarge):
		out["too-large-envelope"] = true
	case isErr:
		out["too-large-envelope"] = ev.Err.Error()
	default:
		out["too-large-envelope"] = fmt.Sprintf("%v %+v", ok, env)
	}
	// A blocking result (an overflow does not grow the region): the
	// error, then Reserve and the same call again.
	big = padded("blocking", 9<<20)
	_, err = t.CallToolBlocking("echo", big)
	var tl *toolhost.TooLargeError
	switch {
	case errors.As(err, &tl) && tl.Size > uint64(len(big)):
		out["too-large-result"] = true
	case err != nil:
		out["too-large-result"] = err.Error()
	default:
		out["too-large-result"] = "no error"
	}
	if tl != nil {
		toolhost.Reserve(int(tl.Size))
		r, err := t.CallToolBlocking("echo", big)
		if err == nil {
			v, verr := r.Result()
			out["too-large-retry"] = verr == nil && v.Text() == "blocking" && r.Arguments == big
		} else {
			out["too-large-retry"] = err.Error()
		}
	}
	// The handle still works after all this.
	out["kind-after"] = t.Kind()

	// After Close.
	if err := t.Close(); err != nil {
		return nil, err
	}
	_, lerr := t.ListTools()
	out["closed"] = map[string]any{
		"kind": t.Kind(), "name": t.Name(), "is-open": t.IsOpen(id), "cancel": t.Cancel(id),
		"unsubscribe": t.UnsubscribeResource(id), "unsubscribe-list": t.UnsubscribeResourceList(id),
		"list-tools": errors.Is(lerr, toolhost.ErrClosed), "close-again": t.Close() == nil,
	}
	return out, nil
}
