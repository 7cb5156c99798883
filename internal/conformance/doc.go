// Package conformance runs the client scenarios of the official MCP
// conformance suite (@modelcontextprotocol/conformance, pinned in
// package.json, on the Node 22 of the npm package `node`) against
// toolhostd's adapter, the command in ./client, which drives
// internal/config and internal/tooling the way `toolhostd call` does. It
// holds only tests.
package conformance
