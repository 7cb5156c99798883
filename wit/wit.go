// Package wit holds the WIT this toolhostd serves, for the tools that build
// agents against it (toolhostd build): the files of this directory are the
// contract; this package only embeds them.
package wit

import _ "embed"

// Agent is wit/agent.wit: the package toolhost:agent@0.3.0 and its world
// agent.
//
//go:embed agent.wit
var Agent []byte
