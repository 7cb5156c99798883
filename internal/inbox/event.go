package inbox

import "github.com/toolhostd/toolhostd/internal/tooling"

// ShutdownID is the id of the shutdown envelope.
const ShutdownID = "00000000-0000-0000-0000-000000000000"

// Envelope is one delivery (WIT inbox.envelope): the id of the call or
// subscription it belongs to and its event.
type Envelope struct {
	ID    string
	Event Event
}

// Event is the WIT inbox.event variant. Its cases are ToolResult, Error,
// ResourceListUpdated, ResourceUpdated and Shutdown; switch on the type.
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
