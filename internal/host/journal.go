package host

// Durable instances (AgentConfig.Durable): every host call whose result the
// guest did not compute itself is recorded in the instance's oplog, and an
// instance started on an oplog that holds entries is first replayed from
// them: each call is answered with its recorded result, without reaching a
// tooling, a provider, the store or the inbox, until the last entry; from
// the next call on the instance is live again. The calls are classed
// (callClasses): some are re-run in replay (those that make a handle), some
// recorded as started before they are issued and completed after (a
// blocking tool or model call), the rest recorded once they returned.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/oplog"
	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// callClass is how a durable instance's journal treats a host function.
type callClass uint8

const (
	// classRecord: recorded once it returned; answered from the oplog in
	// replay.
	classRecord callClass = iota
	// classLocal: re-run in replay and not recorded: it makes a handle
	// or reads what the host holds for the instance (a name), the same
	// on every run.
	classLocal
	// classQuiet: not recorded, and skipped in replay (a log line already
	// written).
	classQuiet
	// classEffect: a blocking call with an outside effect, recorded as
	// started before it is issued and completed with its result.
	classEffect
	// classRefused: a durable instance may not make it (its result holds
	// a handle on live store state that replay cannot re-create).
	classRefused
	// classReapply: recorded once it returned; in replay, made again
	// (its effect is on what the host keeps: a reply to a resumed
	// message) and answered from the oplog.
	classReapply
)

// callClasses are the host functions that are not classRecord, by name
// within their interface. Those marked opens return the id of work that
// goes on after the call (its envelopes come later).
var callClasses = map[string]callClass{
	"get":                   classLocal, // tooling.get, provider.get: a handle
	"open":                  classLocal, // wasi:keyvalue/store.open: a bucket
	"[method]tooling.kind":  classLocal,
	"[method]tooling.name":  classLocal,
	"[method]provider.kind": classLocal,
	"[method]provider.name": classLocal,
	"write":                 classQuiet, // log.write

	// Every call with an effect outside the host is recorded as started
	// before it is issued: those that return at once with an id (opens)
	// too, since their work starts before they return.
	"[method]tooling.call-tool-blocking":      classEffect,
	"[method]provider.chat":                   classEffect,
	"[method]tooling.call-tool":               classEffect,
	"[method]tooling.subscribe-resource-list": classEffect,
	"[method]tooling.subscribe-resource":      classEffect,
	"[method]provider.chat-stream":            classEffect,
	"send":                                    classEffect,
	// The store's writes: a crash between one and its record must not
	// make it twice (an increment).
	"[method]bucket.set":    classEffect,
	"[method]bucket.delete": classEffect,
	"increment":             classEffect,
	"set-many":              classEffect,
	"delete-many":           classEffect,

	"[static]cas.new":     classRefused,
	"[method]cas.current": classRefused,
	"swap":                classRefused,

	"reply-delta": classReapply,
	"reply":       classReapply,
	"reply-error": classReapply,
}

// opens are the functions whose ok result is the id of work that goes on
// (a call, a stream, a subscription, a sent message): a replay that ends
// with one not ended in the oplog tells the guest its outcome is unknown.
var opens = map[string]bool{
	"[method]tooling.call-tool":               true,
	"[method]tooling.subscribe-resource-list": true,
	"[method]tooling.subscribe-resource":      true,
	"[method]provider.chat-stream":            true,
	"send":                                    true,
}

// terminal are the inbox events that end the work of an id.
var terminal = map[string]bool{"tool-result": true, "error": true, "chat-done": true, "reply": true}

// journal is a durable instance's side of its oplog, used on the instance's
// goroutine only.
type journal struct {
	log    *oplog.Log
	zap    *zap.Logger
	rec    []oplog.Entry       // what the oplog held when the instance started
	pos    int                 // the next recorded entry replay answers with
	bound  oplogBound          // past it, the call traps (ErrOplogFull)
	open   map[string]openWork // the work the replayed calls opened, by its id
	deltas map[string]int      // the chat-delta bytes a replayed recv gave, by stream id
	// reapply are the resumed messages whose replies replay makes again
	// (resumeMessages), each with the bytes of reply text it has already
	// (kept from before the restart) that the calls made again skip.
	reapply map[string]int
	// resumed are the ids of those messages, in their order (set at the
	// start, read by Agent.Resumed).
	resumed []string
	start   time.Time
	done    func(entries int, took time.Duration)
	failed  error // the first append that failed: every later call traps
}

// oplogBound bounds an oplog: entries and bytes, 0 unbounded.
type oplogBound struct {
	entries int
	bytes   int64
}

// reached reports whether an oplog of n entries and b bytes is at the
// bound.
func (o oplogBound) reached(n int, b int64) bool {
	return (o.entries > 0 && n >= o.entries) || (o.bytes > 0 && b >= o.bytes)
}

func newJournal(cfg AgentConfig, log *zap.Logger) *journal {
	if cfg.Durable.Oplog == nil {
		return nil
	}
	return &journal{log: cfg.Durable.Oplog, zap: log, rec: cfg.Durable.Oplog.Recorded(), bound: oplogBound{cfg.Durable.MaxEntries, cfg.Durable.MaxBytes},
		open: map[string]openWork{}, deltas: map[string]int{}, reapply: map[string]int{}, start: time.Now(), done: cfg.Durable.OnReplayed}
}

// replaying reports whether recorded calls remain (the message entries
// between them are not calls: replay walks past them).
func (j *journal) replaying() bool {
	for j.pos < len(j.rec) && (j.rec[j.pos].Kind == oplog.KindMessage || j.rec[j.pos].Kind == oplog.KindMessageEnd) {
		j.pos++
	}
	return j.pos < len(j.rec)
}

// journaled wraps fn, the host function call (its interface and name),
// for durable instances; a function of an instance without an oplog runs
// as it is.
func journaled(iface, name string, fn wt.HostFunc) wt.HostFunc {
	class, ok := callClasses[name]
	if !ok {
		class = classRecord
	}
	if class == classLocal {
		return fn
	}
	call := iface + "#" + name
	return func(c *wt.Caller, args []wt.Val, results []wt.Val) error {
		st := stateOf(c)
		j := st.journal
		if j == nil {
			return fn(c, args, results)
		}
		switch class {
		case classQuiet:
			if j.replaying() {
				return nil
			}
			return fn(c, args, results)
		case classRefused:
			return fmt.Errorf("%w: %s", ErrNotDurable, call)
		}
		return j.do(st, c, call, name, class, args, results, fn)
	}
}

// do is one recorded call: answered from the oplog in replay, else made
// and recorded.
func (j *journal) do(st *agentState, c *wt.Caller, call, name string, class callClass, args, results []wt.Val, fn wt.HostFunc) error {
	if j.failed != nil {
		return j.failed
	}
	digest := digestCall(call, args)
	if j.replaying() {
		e := j.rec[j.pos]
		want := oplog.KindResult
		if class == classEffect {
			want = oplog.KindStarted
		}
		if e.Kind != want || e.Call != call || string(e.Digest) != string(digest) {
			return j.diverged(e, call, args)
		}
		if class == classReapply && len(args) > 0 {
			if id, ok := args[0].(wt.String); ok {
				if _, again := j.reapply[string(id)]; again {
					_ = fn(c, j.unsent(name, args), make([]wt.Val, len(results))) // its own answer is the recorded one
				}
			}
		}
		if class == classEffect {
			j.pos++
			if !j.replaying() {
				// Started, never completed: the host stopped while it was
				// out. Issue it again only if that repeats nothing.
				j.ended(st)
				return j.lost(st, c, call, name, args, results, fn)
			}
			e = j.rec[j.pos]
			if e.Kind != oplog.KindCompleted || e.Call != call {
				return j.diverged(e, call, args)
			}
		}
		if err := decodeResults(e.Data, results); err != nil {
			return fmt.Errorf("%w: entry %d (%s): %w", ErrOplogCorrupt, e.Seq, call, err)
		}
		j.pos++
		if opens[name] {
			if id, ok := okString(results); ok {
				j.open[id] = openWork{call: call, stream: streamOf(st, name, args)}
			}
		}
		if name == "recv" || name == "try-recv" {
			j.received(st, results)
		}
		st.pa.Replayed(call, e.Seq)
		if !j.replaying() {
			j.ended(st)
		}
		return nil
	}
	if class == classEffect {
		return j.effect(st, c, call, name, digest, args, results, fn)
	}
	callArgs := args
	if class == classReapply {
		callArgs = j.unsent(name, args)
	}
	if err := j.live(st, c, callArgs, results, fn); err != nil {
		return err
	}
	return j.record(oplog.KindResult, call, digest, results)
}

// effect is a live call of classEffect: its started entry durable before
// it is issued, its completed entry after. A function of handsOff is given
// the wait for the started entry (agentState.ready) and issues the call
// once it returned; any other is called once the wait returned.
func (j *journal) effect(st *agentState, c *wt.Caller, call, name string, digest []byte, args, results []wt.Val, fn wt.HostFunc) error {
	// A started entry keeps its arguments' text (bounded), for a
	// divergence's error and toolhostd oplog.
	p, err := j.log.AppendStart(oplog.Entry{Kind: oplog.KindStarted, Call: call, Digest: digest, Data: []byte(argsText(args))})
	if err != nil {
		return j.fail(err)
	}
	ready := func() error { return j.settle(p) }
	defer func() {
		// Even if fn panics: the store's baton may be this entry's, and
		// a later call must not find this one's wait.
		st.ready = nil
		_ = ready()
	}()
	if handsOff[name] {
		st.ready = ready
	} else if err := ready(); err != nil {
		return err
	}
	err = j.live(st, c, args, results, fn)
	if werr := ready(); werr != nil {
		return werr // the call was not issued: its result is the refusal
	}
	if err != nil {
		return err
	}
	return j.record(oplog.KindCompleted, call, nil, results)
}

// handsOff are the classEffect functions that take the wait for their
// started entry (agentState.ready) and issue their call once it returned.
var handsOff = map[string]bool{"[method]tooling.call-tool-blocking": true}

// unsent is the arguments of a reply call (name, args) to a resumed
// message less the reply text the message has already: a reply-delta's
// text loses its first bytes, as many as remain to skip (reapply). The
// guest replays the same deltas, so the skip ends at one's end; a delta
// the message got but the oplog had not kept yet (relayed from a host
// that died) is skipped when the guest, live again, makes it again.
func (j *journal) unsent(name string, args []wt.Val) []wt.Val {
	if name != "reply-delta" || len(args) < 2 {
		return args
	}
	id, _ := args[0].(wt.String)
	text, ok := args[1].(wt.String)
	skip := j.reapply[string(id)]
	if !ok || skip == 0 {
		return args
	}
	n := min(skip, len(text))
	j.reapply[string(id)] = skip - n
	out := slices.Clone(args)
	out[1] = text[n:]
	return out
}

// live makes a call. What a call returns once the instance is being cut
// off (a suspension, an interrupt) is what the cut made of it (a recv
// woken with nothing, a call cancelled), not its outcome: it is not
// recorded, and the guest traps instead of seeing it.
func (j *journal) live(st *agentState, c *wt.Caller, args, results []wt.Val, fn wt.HostFunc) error {
	if err := fn(c, args, results); err != nil {
		return err
	}
	if st.killed.Err() != nil {
		return fmt.Errorf("%w: the instance is being cut off: its call is not recorded", ErrInterrupted)
	}
	return nil
}

// record appends a call's results, without waiting for them to be
// durable (oplog.Log.AppendLater): they are before the next started
// entry is, that is before the guest's next effect outside the host. A
// crash before then loses them and what follows, never what precedes:
// replay then ends at that call, made live again (a read, or an effect
// whose started entry is there, settled as lost).
func (j *journal) record(kind oplog.Kind, call string, digest []byte, results []wt.Val) error {
	data, err := encodeResults(results)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrNotDurable, call, err)
	}
	return j.append(oplog.Entry{Kind: kind, Call: call, Digest: digest, Data: data})
}

// append writes e, a result or a completion, with the next started entry
// (record; started entries are effect's); past the oplog's bounds, or when
// the write fails, the call traps and so does every later one.
func (j *journal) append(e oplog.Entry) error {
	if _, err := j.log.AppendLater(e); err != nil {
		return j.fail(err)
	}
	return j.bounded()
}

// settle waits for p, a started entry (effect): its failure, or the
// oplog's bound reached, traps the call and every later one.
func (j *journal) settle(p *oplog.Pending) error {
	if _, err := p.Wait(); err != nil {
		return j.fail(err)
	}
	return j.bounded()
}

// fail keeps err, an append's failure, as what every later call traps with.
func (j *journal) fail(err error) error {
	if j.failed == nil {
		j.failed = fmt.Errorf("%w: %w", ErrOplogWrite, err)
	}
	return j.failed
}

// bounded traps the call, and every later one, past the oplog's bound.
func (j *journal) bounded() error {
	if j.failed != nil {
		return j.failed
	}
	n, b := j.log.Len()
	if j.bound.reached(n, b) {
		j.failed = fmt.Errorf("%w: %d entries, %d bytes", ErrOplogFull, n, b)
		return j.failed
	}
	return nil
}

// okString is the id of an ok(string) result.
func okString(results []wt.Val) (string, bool) {
	if len(results) != 1 {
		return "", false
	}
	r, ok := results[0].(wt.Result)
	if !ok || r.Err {
		return "", false
	}
	s, ok := r.Payload.(wt.String)
	return string(s), ok
}

// argsText shows a call's arguments in a divergence error, bounded.
func argsText(args []wt.Val) string {
	var b strings.Builder
	b.WriteByte('(')
	for _, a := range args {
		if _, self := a.(wt.ResourceHost); self {
			continue
		}
		if b.Len() > 1 {
			b.WriteString(", ")
		}
		if s, ok := a.(wt.String); ok {
			fmt.Fprintf(&b, "%q", string(s))
		} else {
			fmt.Fprint(&b, a)
		}
	}
	b.WriteByte(')')
	s := b.String()
	if len(s) > 200 {
		n := 200
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return s
}

// KeepsOplog reports whether a durable instance that ended with runErr
// left work its next start resumes (its oplog is kept): not when its run
// returned, nor when a replay of it cannot go on (a changed component, a
// divergence, a corrupt or full oplog, a call it cannot record).
func KeepsOplog(runErr error) bool {
	var re *RunError
	switch {
	case runErr == nil, errors.As(runErr, &re):
		return false // its run returned
	case errors.Is(runErr, ErrDiverged), errors.Is(runErr, ErrComponentChanged),
		errors.Is(runErr, ErrOplogCorrupt), errors.Is(runErr, ErrOplogFull),
		errors.Is(runErr, ErrNotDurable), errors.Is(runErr, oplog.ErrCorrupt):
		return false // a replay of it cannot go on
	}
	return true
}
