// Package js embeds sdk/js, the helper module of JavaScript agents
// (toolhost.js, its declarations and the declarations of the host's
// modules generated from the WIT), for toolhostd new to copy into a
// project.
package js

import "embed"

// Files holds toolhost.js, toolhost.d.ts and types/.
//
//go:embed toolhost.js toolhost.d.ts types
var Files embed.FS
