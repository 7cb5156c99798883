package toolhost

import (
	"math"
	"time"
)

// ShutdownID is the id of the shutdown envelope.
const ShutdownID = "00000000-0000-0000-0000-000000000000"

// Forever, as Recv's timeout, waits until an envelope arrives.
const Forever time.Duration = -1

// Envelope is one inbox entry (WIT record envelope): the id of the call or
// subscription it belongs to, and what happened.
type Envelope struct {
	ID    string
	Event Event
}

// Event is the WIT variant event: one of ToolResultEvent, ErrorEvent,
// ResourceListUpdatedEvent, ResourceUpdatedEvent, ShutdownEvent. Use a type
// switch; Tag names the WIT case.
type Event interface {
	// Tag is the WIT case name: "tool-result", "error",
	// "resource-list-updated", "resource-updated" or "shutdown".
	Tag() string
	isEvent()
}

// ToolResultEvent: a call made with CallTool succeeded.
type ToolResultEvent struct{ Result ToolResult }

// ErrorEvent: a call failed, or a subscription's re-subscription failed.
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

func (ToolResultEvent) Tag() string          { return "tool-result" }
func (ErrorEvent) Tag() string               { return "error" }
func (ResourceListUpdatedEvent) Tag() string { return "resource-list-updated" }
func (ResourceUpdatedEvent) Tag() string     { return "resource-updated" }
func (ShutdownEvent) Tag() string            { return "shutdown" }

func (ToolResultEvent) isEvent()          {}
func (ErrorEvent) isEvent()               {}
func (ResourceListUpdatedEvent) isEvent() {}
func (ResourceUpdatedEvent) isEvent()     {}
func (ShutdownEvent) isEvent()            {}

// Recv returns the next envelope in arrival order, waiting up to timeout
// (rounded up to whole milliseconds; 0 does not wait; Forever waits until
// one arrives). ok is false when none came in time, and at once after the
// shutdown envelope was delivered.
func Recv(timeout time.Duration) (env Envelope, ok bool) {
	some, ms := uint32(0), uint32(0)
	if timeout >= 0 {
		some = 1
		ms = timeoutMS(timeout)
	}
	hostCall(func(ret uint32) { rawRecv(some, ms, ret) }, func(m memory, ret uint32) { env, ok = liftOptEnvelope(m, ret) })
	return env, ok
}

// timeoutMS rounds d up to milliseconds, capped at the u32 maximum.
func timeoutMS(d time.Duration) uint32 {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	if ms > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(ms)
}

// TryRecv returns the next envelope if one is waiting.
func TryRecv() (env Envelope, ok bool) {
	hostCall(rawTryRecv, func(m memory, ret uint32) { env, ok = liftOptEnvelope(m, ret) })
	return env, ok
}

// Pending is how many envelopes are undelivered.
func Pending() int {
	lock()
	defer unlock()
	return int(rawPending())
}
