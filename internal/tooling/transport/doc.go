// Package transport owns the wire under an MCP session: the stdio
// transport that runs a server command (Command), the HTTP round tripper
// that sets a tooling's headers and bounds its requests while a session
// closes (Header), the max_message_bytes limit on what servers send
// (MessageLimit), the hint for a transport mistake (HTTPStatus, Hint), a
// server's stderr in the log (LineLogger), and the Tracker that lets a
// closing session flush its cancellation notices. It knows nothing of
// sessions, OAuth or configs: the session package builds these from a
// tooling's config.
package transport

// The names of the config's `transport` key.
const (
	Stdio = "stdio"
	HTTP  = "http"
	SSE   = "sse"
)
