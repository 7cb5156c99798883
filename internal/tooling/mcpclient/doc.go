// Package mcpclient is the `mcp` kind of tooling: one go-sdk ClientSession
// per configured MCP server, shared by every caller and kept alive by Serve
// (connection, backoff, liveness, re-subscription), with the calls, the
// subscriptions, progress, closing, the client capabilities a server may
// use (roots, elicitation, logging), OAuth for http and sse servers, and
// the Registry that builds one Client per [tooling.<name>] entry. The wire
// under a session is in the transport package; the domain it implements is
// in tooling.
package mcpclient
