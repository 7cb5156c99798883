package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/toolhostd/toolhostd/sdk/go/toolhost"
)

// The messages ops of probe.js (see its header): reply, reply-delta,
// reply-error, send, msg-is-open, msg-cancel, recv-message, recv-reply
// and serve; recv's "as" is in main.go.

// messageOps are the messages ops, by name.
var messageOps = map[string]func(p *probe, s *step) (any, error){
	"reply":       func(p *probe, s *step) (any, error) { return true, toolhost.Messages.Reply(p.id(s), str(s.Content)) },
	"reply-delta": func(p *probe, s *step) (any, error) { return true, toolhost.Messages.ReplyDelta(p.id(s), str(s.Text)) },
	"reply-error": func(p *probe, s *step) (any, error) {
		return true, toolhost.Messages.ReplyError(p.id(s), str(s.Message))
	},
	"send": func(p *probe, s *step) (any, error) {
		id, err := toolhost.Messages.Send(s.To, str(s.Content), s.Session)
		if err != nil {
			return nil, err
		}
		return p.bindID(s, id), nil
	},
	"msg-is-open": func(p *probe, s *step) (any, error) { return toolhost.Messages.IsOpen(p.id(s)), nil },
	"msg-cancel":  func(p *probe, s *step) (any, error) { return toolhost.Messages.Cancel(p.id(s)), nil },
	"recv-message": func(p *probe, s *step) (any, error) {
		skipped := []any{}
		for {
			e, ok := toolhost.Recv(recvTimeout(s))
			if !ok {
				return map[string]any{"got": nil, "skipped": skipped}, nil
			}
			if _, msg := e.Event.(toolhost.MessageEvent); msg {
				p.bindID(s, e.ID)
				return map[string]any{"got": p.envelope(e, true), "skipped": skipped}, nil
			}
			skipped = append(skipped, p.envelope(e, true))
			if _, shut := e.Event.(toolhost.ShutdownEvent); shut {
				return map[string]any{"got": nil, "skipped": skipped}, nil
			}
		}
	},
	"recv-reply": func(p *probe, s *step) (any, error) {
		return p.follow(s, func(ev toolhost.Event) (string, bool) {
			d, ok := ev.(toolhost.ReplyDeltaEvent)
			return d.Text, ok
		}), nil
	},
	"serve": (*probe).serve,
}

// str is an optional string step field, "" when absent.
func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// answers are serve's modes: how each message is answered.
var answers = map[string]func(id, content string) error{
	"echo": func(id, c string) error { return toolhost.Messages.Reply(id, c) },
	"deltas": func(id, c string) error {
		for _, w := range strings.SplitAfter(c, " ") {
			if w == "" {
				continue
			}
			if err := toolhost.Messages.ReplyDelta(id, w); err != nil {
				return err
			}
		}
		return toolhost.Messages.Reply(id, "")
	},
	"upper": func(id, c string) error {
		return toolhost.Messages.Reply(id, strings.Map(func(r rune) rune {
			if 'a' <= r && r <= 'z' {
				return r - 'a' + 'A'
			}
			return r
		}, c))
	},
	"error":  func(id, c string) error { return toolhost.Messages.ReplyError(id, c) },
	"silent": func(string, string) error { return nil },
	"die": func(id, c string) error {
		if err := toolhost.Messages.ReplyDelta(id, c); err != nil {
			return err
		}
		panic("died mid-reply")
	},
}

// serve answers messages by s.Mode until s.Count were handled or shutdown.
func (p *probe) serve(s *step) (any, error) {
	answer, ok := answers[s.Mode]
	if !ok {
		return nil, fmt.Errorf("Error: no serve mode %s", s.Mode)
	}
	handled, ignored, shutdown := 0, 0, false
	failures := []map[string]string{}
	for s.Count == nil || handled < *s.Count {
		e, ok := toolhost.Recv(toolhost.Forever)
		if _, shut := e.Event.(toolhost.ShutdownEvent); !ok || shut {
			shutdown = true
			break
		}
		msg, isMsg := e.Event.(toolhost.MessageEvent)
		if !isMsg {
			ignored++
			continue
		}
		handled++
		err := answer(e.ID, msg.Message.Content)
		var he *toolhost.HostError
		switch {
		case errors.As(err, &he):
			failures = append(failures, map[string]string{"id": p.name(e.ID), "code": he.Code.String(), "message": he.Message})
		case err != nil:
			return nil, err
		}
	}
	return map[string]any{"handled": handled, "ignored": ignored, "shutdown": shutdown, "failures": failures}, nil
}
