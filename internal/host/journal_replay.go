package host

// The end of a durable instance's replay (journal.go): what is done with
// the calls its oplog shows out when the instance was cut off, and with
// the work its replayed calls opened; the errors of a replay that cannot
// go on.

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/oplog"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/tooling"
	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// lost settles a call recorded as started and never completed: a model
// call (chatAgain), or a tool call its server says is repeatable, is
// issued again (and recorded as completed); any other gets unavailable,
// "outcome unknown after a restart", and the guest decides.
func (j *journal) lost(st *agentState, c *wt.Caller, call, name string, args, results []wt.Val, fn wt.HostFunc) error {
	again := false
	switch name {
	case "[method]provider.chat", "[method]provider.chat-stream":
		return j.chatAgain(st, call, name, args, results)
	case "[method]tooling.subscribe-resource-list", "[method]tooling.subscribe-resource",
		"[method]bucket.set", "[method]bucket.delete", "set-many", "delete-many":
		again = true // a subscription only reads; a write of a value, made twice, is made once
	case "[method]tooling.call-tool-blocking", "[method]tooling.call-tool":
		if h, err := selfArg(st.handles.tools, toolingType, "tooling", args); err == nil && len(args) > 1 {
			if tool, ok := args[1].(wt.String); ok {
				again = h.Repeatable(st.stopping, string(tool))
			}
		}
	}
	j.zap.Warn("a call was out when the instance stopped", zap.String("call", call), zap.Bool("issued_again", again))
	if again {
		if err := fn(c, args, results); err != nil {
			return err
		}
	} else if name == "increment" { // wasi:keyvalue's own error
		results[0] = kvResult(nil, errors.New("unavailable: outcome unknown after a restart"))
	} else {
		results[0] = errResult(tooling.Errorf(tooling.CodeUnavailable, "outcome unknown after a restart"))
	}
	return j.record(oplog.KindCompleted, call, nil, results)
}

// chatAgain makes a model call that was out when the instance stopped
// again: it is paid again, and its audit line says it was made again.
func (j *journal) chatAgain(st *agentState, call, name string, args, results []wt.Val) error {
	ph, err := selfArg(st.handles.provs, providerType, "provider", args)
	if err != nil {
		return err
	}
	req, err := requestOf(args[1:])
	if err != nil {
		return err
	}
	j.zap.Warn("a model call was out when the instance stopped: made again", zap.String("call", call))
	if name == "[method]provider.chat-stream" {
		id, err := ph.ChatStreamAgain("", req, 0)
		if err != nil {
			results[0] = errResult(err)
		} else {
			results[0] = wt.Ok(wt.String(id))
		}
	} else {
		resp, err := ph.ChatAgain(st.stopping, req)
		if err != nil {
			results[0] = errResult(err)
		} else {
			results[0] = wt.Ok(chatResponseVal(resp))
		}
	}
	return j.record(oplog.KindCompleted, call, nil, results)
}

// diverged is the error of a call other than the one recorded at pos.
func (j *journal) diverged(e oplog.Entry, call string, args []wt.Val) error {
	d := &DivergenceError{Seq: e.Seq, Recorded: e.Call, RecordedKind: e.Kind.String(), Call: call, Args: argsText(args)}
	if e.Kind == oplog.KindStarted {
		d.RecordedArgs = string(e.Data)
	}
	return d
}

// received notes the ids a replayed recv ended, and the message it gave
// the guest.
func (j *journal) received(st *agentState, results []wt.Val) {
	opt, ok := results[0].(wt.Option)
	if !ok || opt.Some == nil {
		return
	}
	rec, _ := opt.Some.(wt.Record)
	id, _ := rec.Get("id").(wt.String)
	ev, _ := rec.Get("event").(wt.Variant)
	if ev.Case == "message" { // the message the guest works on from here (its span: the resumed one's)
		st.pa.Received(inbox.Envelope{ID: string(id), Event: inbox.Message{}})
	}
	switch {
	case terminal[ev.Case]:
		delete(j.open, string(id))
	case ev.Case == "chat-delta":
		text, _ := ev.Payload.(wt.String)
		j.deltas[string(id)] += len(text)
	}
}

// openWork is what a replayed call opened: a chat stream is made again at
// the end of the replay if its end is not in the oplog.
type openWork struct {
	call   string
	stream *streamAgain // a chat-stream's; nil for the others
}

// streamAgain is what making a chat stream again takes.
type streamAgain struct {
	ph  *contract.ProviderHandle
	req provider.Request
}

// streamOf keeps a replayed chat-stream's provider and request.
func streamOf(st *agentState, name string, args []wt.Val) *streamAgain {
	if name != "[method]provider.chat-stream" {
		return nil
	}
	ph, err := selfArg(st.handles.provs, providerType, "provider", args)
	if err != nil {
		return nil
	}
	req, err := requestOf(args[1:])
	if err != nil {
		return nil
	}
	return &streamAgain{ph: ph, req: req}
}

// ended is the end of the replay: the work the replayed calls opened and
// the oplog does not end was lost with the instance that started it; each
// gets an error envelope, as a call whose server died does.
func (j *journal) ended(st *agentState) {
	for id, w := range j.open {
		if s := w.stream; s != nil {
			// A model call is made again (its tokens counted again, its
			// audit line says so).
			_, err := s.ph.ChatStreamAgain(id, s.req, j.deltas[id])
			j.zap.Warn("a chat stream was open when the instance stopped: made again", zap.String("stream_id", id), zap.Int("delivered_bytes", j.deltas[id]), zap.Error(err))
			if err == nil {
				continue
			}
		}
		msg := "outcome unknown after a restart"
		if strings.Contains(w.call, "subscribe") {
			msg = "the subscription ended with a restart: subscribe again"
		}
		if st.in.Reserve(id) == nil {
			st.in.Deliver(id, inbox.Error{Err: tooling.Error{Code: tooling.CodeUnavailable, Message: msg}})
		}
	}
	clear(j.open)
	took := time.Since(j.start)
	j.zap.Info("replayed", zap.Int("entries", len(j.rec)), zap.Duration("took", took))
	if j.done != nil {
		j.done(len(j.rec), took)
	}
	j.rec, j.pos = nil, 0 // live from here on: the recorded entries are not needed again
}

// DivergenceError stops a replayed instance that made a call other than
// the one its oplog recorded at that position (or with other arguments):
// its component or its input is not what made the oplog, or it reads
// something replay does not reproduce.
type DivergenceError struct {
	Seq          uint64 // the recorded entry
	Recorded     string // its call
	RecordedKind string
	RecordedArgs string // its arguments, for a started entry ("": not kept)
	Call         string // the call the guest made instead
	Args         string
}

func (e *DivergenceError) Error() string {
	recorded := e.Recorded
	if e.RecordedArgs != "" {
		recorded += " with " + e.RecordedArgs
	}
	return fmt.Sprintf("replay diverged at oplog entry %d: recorded %s (%s), the guest called %s with %s",
		e.Seq, recorded, e.RecordedKind, e.Call, e.Args)
}

// Is makes errors.Is(err, ErrDiverged) true.
func (e *DivergenceError) Is(target error) bool { return target == ErrDiverged }

// checkOplog refuses an oplog recorded by another component (or engine
// settings): replay into it would answer calls it does not make.
func checkOplog(p *Program, cfg AgentConfig) error {
	if cfg.Durable.Oplog == nil || len(cfg.Durable.Oplog.Recorded()) == 0 {
		return nil
	}
	if got, want := p.Content(), cfg.Durable.Oplog.Header().Component; got != want {
		return fmt.Errorf("%w: the oplog %s was recorded by component %s, this is %s: it is not replayed",
			ErrComponentChanged, cfg.Durable.Oplog.Key(), short(want), short(got))
	}
	return nil
}

func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	if digest == "" {
		return "(none)"
	}
	return digest
}
