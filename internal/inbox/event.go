package inbox

import (
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// ShutdownID is the id of the shutdown envelope.
const ShutdownID = "00000000-0000-0000-0000-000000000000"

// Envelope is one delivery (WIT inbox.envelope): the id of the call or
// subscription it belongs to and its event.
type Envelope struct {
	ID    string
	Event Event
}

// Event is the WIT inbox.event variant. Its cases are ToolResult, Error,
// ResourceListUpdated, ResourceUpdated, Shutdown, ChatDelta and ChatDone
// (only for agents of toolhost:agent@0.2.0 or later, which alone can start
// a chat stream), and Message, ReplyDelta and Reply (only for 0.3.0
// agents, which alone can receive and send messages); switch on the type.
type Event interface{ isEvent() }

// ToolResult is the tool-result case: a call that succeeded (an MCP result
// with isError true included).
type ToolResult struct{ Result tooling.ToolResult }

// Error is the error case: a call that failed, or a subscription that ended
// because its re-subscription failed.
type Error struct{ Err tooling.Error }

// ResourceListUpdated is the resource-list-updated case: the full list
// fetched when the server reported the change.
type ResourceListUpdated struct{ Resources []tooling.ResourceInfo }

// ResourceUpdated is the resource-updated case: the content read when the
// server reported the update.
type ResourceUpdated struct{ Content tooling.ResourceContent }

// Shutdown is the shutdown case; it carries nothing.
type Shutdown struct{}

// ChatDelta is the chat-delta case: more text of a chat stream (possibly
// several deltas merged while undelivered).
type ChatDelta struct{ Text string }

// ChatDone is the chat-done case: the end of a chat stream, with the whole
// response.
type ChatDone struct{ Response provider.Response }

// Message is the message case (toolhost:agent@0.3.0): a message to this
// agent; the envelope id is the message id its reply goes under.
type Message struct {
	Sender  string
	Session *string // nil: a one-off
	Content string
}

// ReplyDelta is the reply-delta case: more text of the reply to a message
// this agent sent (possibly several deltas merged while undelivered).
type ReplyDelta struct{ Text string }

// Reply is the reply case: the whole reply to a message this agent sent.
type Reply struct{ Text string }

func (Message) isEvent()             {}
func (ReplyDelta) isEvent()          {}
func (Reply) isEvent()               {}
func (ChatDelta) isEvent()           {}
func (ChatDone) isEvent()            {}
func (ToolResult) isEvent()          {}
func (Error) isEvent()               {}
func (ResourceListUpdated) isEvent() {}
func (ResourceUpdated) isEvent()     {}
func (Shutdown) isEvent()            {}

// isUpdate reports the events that coalesce per subscription.
func isUpdate(ev Event) bool {
	switch ev.(type) {
	case ResourceUpdated, ResourceListUpdated:
		return true
	}
	return false
}
