package toolhost

import (
	"context"
	"math"
	"runtime"
	"time"
)

// ShutdownID is the id of the shutdown envelope.
const ShutdownID = "00000000-0000-0000-0000-000000000000"

// Forever, as Recv's timeout, waits until an envelope arrives. It is the
// largest Duration, so that no computed timeout (time.Until of a past
// deadline is negative) means it by accident.
const Forever time.Duration = math.MaxInt64

// Envelope is one inbox entry (WIT record envelope): the id of the call,
// stream or subscription it belongs to, and what happened.
type Envelope struct {
	ID    string
	Event Event
}

// Event is the WIT variant event: one of ToolResultEvent, ErrorEvent,
// ResourceListUpdatedEvent, ResourceUpdatedEvent, ShutdownEvent,
// ChatDeltaEvent, ChatDoneEvent, MessageEvent, ReplyDeltaEvent,
// ReplyEvent. Use a type switch; Tag names the WIT case.
type Event interface {
	// Tag is the WIT case name: "tool-result", "error",
	// "resource-list-updated", "resource-updated", "shutdown",
	// "chat-delta", "chat-done", "message", "reply-delta" or "reply".
	Tag() string
	isEvent()
}

// ToolResultEvent: a call made with CallTool succeeded.
type ToolResultEvent struct{ Result ToolResult }

// ErrorEvent: a call or a chat stream failed, or a subscription's
// re-subscription failed. An envelope too large for the reserved region
// is an ErrorEvent too (code Internal, unwrapping to a *TooLargeError):
// see Reserve.
type ErrorEvent struct{ Err *HostError }

// ResourceListUpdatedEvent: the resource list changed (a
// SubscribeResourceList subscription); the full list at change time.
type ResourceListUpdatedEvent struct{ Resources []ResourceInfo }

// ResourceUpdatedEvent: a subscribed resource changed; its content read at
// update time.
type ResourceUpdatedEvent struct{ Content ResourceContent }

// ShutdownEvent: the host is stopping the agent; return from run soon.
// Its envelope's ID is ShutdownID.
type ShutdownEvent struct{}

// ChatDeltaEvent: more text of a ChatStream. Undelivered deltas of one
// stream may have been merged into one; none is dropped: the deltas of a
// stream, concatenated, are its ChatDoneEvent's text.
type ChatDeltaEvent struct{ Text string }

// ChatDoneEvent: the end of a ChatStream, with the whole response.
type ChatDoneEvent struct{ Response ChatResponse }

// MessageEvent: a message to this agent. Its envelope's ID is the id to
// reply to (Messages.Reply, or a Replier: see Inbox.Serve).
type MessageEvent struct{ Message AgentMessage }

// ReplyDeltaEvent: more text of the reply to a message this agent sent
// (Messages.Send). Undelivered deltas of one reply may have been merged
// into one; none is dropped.
type ReplyDeltaEvent struct{ Text string }

// ReplyEvent: the end of the reply to a message this agent sent. The
// whole reply is the text of its ReplyDeltaEvents followed by Content.
type ReplyEvent struct{ Content string }

func (ToolResultEvent) Tag() string          { return "tool-result" }
func (ErrorEvent) Tag() string               { return "error" }
func (ResourceListUpdatedEvent) Tag() string { return "resource-list-updated" }
func (ResourceUpdatedEvent) Tag() string     { return "resource-updated" }
func (ShutdownEvent) Tag() string            { return "shutdown" }
func (ChatDeltaEvent) Tag() string           { return "chat-delta" }
func (ChatDoneEvent) Tag() string            { return "chat-done" }
func (MessageEvent) Tag() string             { return "message" }
func (ReplyDeltaEvent) Tag() string          { return "reply-delta" }
func (ReplyEvent) Tag() string               { return "reply" }

func (ToolResultEvent) isEvent()          {}
func (ErrorEvent) isEvent()               {}
func (ResourceListUpdatedEvent) isEvent() {}
func (ResourceUpdatedEvent) isEvent()     {}
func (ShutdownEvent) isEvent()            {}
func (ChatDeltaEvent) isEvent()           {}
func (ChatDoneEvent) isEvent()            {}
func (MessageEvent) isEvent()             {}
func (ReplyDeltaEvent) isEvent()          {}
func (ReplyEvent) isEvent()               {}

// shutdownSeen is set when the shutdown envelope was lifted (abiMu).
var shutdownSeen bool

// Recv returns the next envelope in arrival order, waiting up to timeout
// (rounded up to whole milliseconds, at most math.MaxUint32 ms). A timeout
// of 0 or less does not wait; Forever waits until one arrives. ok is false
// when none came in time, and at once after the shutdown envelope was
// delivered.
func Recv(timeout time.Duration) (env Envelope, ok bool) {
	some, ms := recvArgs(timeout)
	hostCallOver(func(ret uint32) { rawRecv(some, ms, ret) },
		func(m memory, ret uint32) { env, ok = liftOptEnvelope(m, ret) },
		func(m memory, ret uint32, err *TooLargeError) { env, ok = tooLargeEnvelope(m, ret, err) })
	return env, ok
}

// recvArgs is recv's option<u32> timeout-ms for a Recv timeout.
func recvArgs(timeout time.Duration) (some, ms uint32) {
	switch {
	case timeout == Forever:
		return 0, 0
	case timeout <= 0:
		return 1, 0
	}
	return 1, timeoutMS(timeout)
}

// RecvDeadline is Recv waiting until deadline at the latest (a deadline
// that has passed does not wait).
func RecvDeadline(deadline time.Time) (env Envelope, ok bool) {
	return Recv(max(time.Until(deadline), 0))
}

// contextSlice is how long RecvContext waits in one host call for a
// context that can be cancelled: a wasm guest is one thread, so the
// goroutine that would cancel it runs only between host calls.
const contextSlice = 100 * time.Millisecond

// RecvContext returns the next envelope, waiting until one arrives or ctx
// is done (its error is returned then). A context without a deadline
// that can be cancelled is checked every 100 ms, with the other
// goroutines run in between (they are stopped while the host waits). After
// the shutdown envelope was delivered it returns ErrShutdown at once.
func RecvContext(ctx context.Context) (Envelope, error) {
	for {
		if err := ctx.Err(); err != nil {
			return Envelope{}, err
		}
		wait := Forever
		if d, ok := ctx.Deadline(); ok {
			wait = max(time.Until(d), 0)
		}
		if ctx.Done() != nil {
			wait = min(wait, contextSlice)
		}
		if env, ok := Recv(wait); ok {
			return env, nil
		}
		lock()
		shut := shutdownSeen
		unlock()
		if shut {
			return Envelope{}, ErrShutdown
		}
		runtime.Gosched()
	}
}

// timeoutMS rounds d up to milliseconds, capped at the u32 maximum.
func timeoutMS(d time.Duration) uint32 {
	ms := d / time.Millisecond
	if d%time.Millisecond != 0 {
		ms++
	}
	if ms > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(ms)
}

// TryRecv returns the next envelope if one is waiting.
func TryRecv() (env Envelope, ok bool) {
	hostCallOver(rawTryRecv,
		func(m memory, ret uint32) { env, ok = liftOptEnvelope(m, ret) },
		func(m memory, ret uint32, err *TooLargeError) { env, ok = tooLargeEnvelope(m, ret, err) })
	return env, ok
}

// Pending is how many envelopes are undelivered.
func Pending() int {
	lock()
	defer unlock()
	return int(rawPending())
}

// tooLargeEnvelope is what Recv returns for an envelope whose result did
// not fit the reserved region: its id when that fitted (it is lowered
// first), and an ErrorEvent saying so.
func tooLargeEnvelope(m memory, ret uint32, err *TooLargeError) (Envelope, bool) {
	if u8(m, ret+offOptEnvDisc) != 1 {
		return Envelope{}, false
	}
	env := Envelope{Event: ErrorEvent{Err: &HostError{Code: Internal, Message: err.Error(), cause: err}}}
	p := ret + offOptEnvVal + offEnvelopeID
	if ptr, n := u32(m, p+offPtr), u32(m, p+offLen); inReserve(ptr, n) {
		env.ID = liftString(m, p)
	}
	return env, true
}
