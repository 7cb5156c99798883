// Package scripts embeds the build scripts toolhostd runs outside a
// checkout of this repository (toolhostd build).
package scripts

import _ "embed"

// ComponentizeGo is componentize-go.mjs: it turns a Go reactor module into
// a toolhost:agent component with jco's JS API.
//
//go:embed componentize-go.mjs
var ComponentizeGo []byte

// WitSource is wit-source.mjs, which componentize-go.mjs imports: a WIT
// file's text with the packages of its deps/ directory.
//
//go:embed wit-source.mjs
var WitSource []byte
