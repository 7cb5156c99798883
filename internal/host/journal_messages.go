package host

// A durable instance's messages (journal.go): each message it accepts is
// in its oplog before its sender is answered, and the end of its reply
// too; an instance that takes over from one that was cut off (its host
// killed) opens again every message accepted and not ended, through the
// router, so that its reply is still made and kept under its id and its
// idempotency key. The guest's replies are made again in replay (they
// reach no one outside: the router keeps them), less the reply text the
// message has already: none when the router had lost it (its host died),
// its reply so far when the router still has it (handed over by a
// reload, or forwarded from this host to the one that died).

import (
	"encoding/json"
	"strings"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/oplog"
	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// callMessage is the Call of the message entries.
const callMessage = "message"

// mailJournal is a durable instance's message.Journal.
type mailJournal struct{ log *oplog.Log }

// recordedMessage is a KindMessage entry's data.
type recordedMessage struct {
	ID      string `json:"id"`
	Agent   string `json:"agent"`
	Session string `json:"session,omitempty"`
	Sender  string `json:"sender"`
	Content string `json:"content"`
	Key     string `json:"idempotency_key,omitempty"`
	Audit   bool   `json:"audit,omitempty"`
	// TraceID and SpanID are the message's span's (hex; "" when not
	// traced): a resumed message's span is its child.
	TraceID string `json:"trace_id,omitempty"`
	SpanID  string `json:"span_id,omitempty"`
}

// parent is the span context a resumed message's span is a child of.
func (m recordedMessage) parent() trace.SpanContext {
	tid, err1 := trace.TraceIDFromHex(m.TraceID)
	sid, err2 := trace.SpanIDFromHex(m.SpanID)
	if err1 != nil || err2 != nil {
		return trace.SpanContext{}
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}

func (j mailJournal) Accepted(m *message.Message) error {
	rm := recordedMessage{ID: m.ID(), Agent: m.Agent(), Session: m.Session(), Sender: m.Sender(),
		Content: m.Content(), Key: m.IdempotencyKey(), Audit: m.Audit()}
	if sc := m.SpanContext(); sc.IsSampled() {
		rm.TraceID, rm.SpanID = sc.TraceID().String(), sc.SpanID().String()
	}
	data, err := json.Marshal(rm)
	if err != nil {
		return err
	}
	_, err = j.log.Append(oplog.Entry{Kind: oplog.KindMessage, Call: callMessage, Data: data})
	return err
}

// Ended records the end of a reply; once the instance's oplog is closed
// (the instance ended) there is nothing to record it in.
func (j mailJournal) Ended(id string) {
	// Not waited for: lost in a crash, the message is resumed and the
	// guest's reply, made again in replay, ends it again.
	_, _ = j.log.AppendLater(oplog.Entry{Kind: oplog.KindMessageEnd, Call: callMessage, Data: []byte(id)})
}

// openMessages are the messages rec accepted and did not end, in the
// order they were accepted, and which of them a recorded recv gave the
// guest.
func openMessages(rec []oplog.Entry) (open []recordedMessage, received map[string]bool) {
	byID := map[string]int{}
	received = map[string]bool{}
	for _, e := range rec {
		switch {
		case e.Kind == oplog.KindMessage:
			var m recordedMessage
			if json.Unmarshal(e.Data, &m) == nil && m.ID != "" {
				byID[m.ID] = len(open)
				open = append(open, m)
			}
		case e.Kind == oplog.KindMessageEnd:
			if i, ok := byID[string(e.Data)]; ok {
				open[i].ID = "" // ended
			}
		case e.Kind == oplog.KindResult && (strings.HasSuffix(e.Call, "#recv") || strings.HasSuffix(e.Call, "#try-recv")):
			results := make([]wt.Val, 1)
			if decodeResults(e.Data, results) != nil {
				continue
			}
			if id, ok := messageEnvelope(results[0]); ok {
				received[id] = true
			}
		}
	}
	live := open[:0]
	for _, m := range open {
		if m.ID != "" {
			live = append(live, m)
		}
	}
	return live, received
}

// messageEnvelope is the id of a recv's result that is a message.
func messageEnvelope(v wt.Val) (string, bool) {
	opt, ok := v.(wt.Option)
	if !ok || opt.Some == nil {
		return "", false
	}
	rec, _ := opt.Some.(wt.Record)
	id, _ := rec.Get("id").(wt.String)
	ev, _ := rec.Get("event").(wt.Variant)
	return string(id), ev.Case == "message"
}

// resumeMessages opens again, in the new instance a, the messages its
// oplog accepted and did not end (see the file's comment). A message the
// router cannot take again is logged and left: its sender's retry
// decides.
func (a *Agent) resumeMessages(j *journal) {
	open, received := openMessages(j.rec)
	router := a.cfg.Messaging.Router
	if len(open) == 0 || router == nil {
		return
	}
	for _, rm := range open {
		m, fresh, err := router.Resume(message.Request{ID: rm.ID, Agent: rm.Agent, Session: rm.Session, Sender: rm.Sender,
			Content: rm.Content, IdempotencyKey: rm.Key, Audit: rm.Audit}, rm.parent())
		if err == nil {
			err = a.Mailbox().Resume(m, !received[rm.ID])
		}
		if err == nil {
			// Its replies are made again in replay, less what it has:
			// nothing when its host died with it (fresh), its reply so far
			// when it was handed over here or forwarded from here.
			skip := 0
			if !fresh {
				skip = m.ReplyBytes()
			}
			j.reapply[rm.ID] = skip
			j.resumed = append(j.resumed, rm.ID)
		}
		if err != nil {
			a.log.Warn("a message accepted before the restart cannot be resumed", zap.String("message_id", rm.ID), zap.Error(err))
			continue
		}
		a.log.Info("message resumed", zap.String("message_id", rm.ID), zap.Bool("received", received[rm.ID]))
	}
}
