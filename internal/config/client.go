package config

import (
	"net/url"
	"path/filepath"
	"strings"
)

// The client-capability keys of a [tooling.<name>] table: what toolhostd's
// MCP client offers the server.

// Elicitation policies (tooling.X.elicitation).
const (
	// ElicitationDecline answers every elicitation/create with "decline"
	// (the default).
	ElicitationDecline = "decline"
	// ElicitationAcceptDefaults accepts, filling every field from the
	// requested schema's defaults (SEP-1034).
	ElicitationAcceptDefaults = "accept-defaults"
)

// ElicitationPolicies are the values of tooling.X.elicitation.
var ElicitationPolicies = []string{ElicitationDecline, ElicitationAcceptDefaults}

// MCPLogLevels are the MCP logging levels (RFC 5424 severities), the values
// of tooling.X.log_level.
var MCPLogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// roots decodes tooling.X.roots: file:// URIs, or paths (relative ones
// resolve against the config's directory, like cwd) which become file://
// URIs. Other schemes are errors: MCP roots are file:// URIs.
func (d *decoder) roots(path []string, v any) ([]string, bool) {
	return d.asStrings(path, v, func(p []string, s string) bool {
		if HasRefs(s) {
			d.errAt(p, "${...} references are not expanded here (only in command, args, env, url and headers); write $${ for a literal ${")
			return false
		}
		if s == "" {
			d.errAt(p, "must not be empty")
			return false
		}
		return true
	})
}

// rootURIs makes every entry of tooling.X.roots a file:// URI, reporting
// the ones that cannot be.
func (d *decoder) rootURIs(path []string, in []string) []string {
	out := make([]string, 0, len(in))
	for i, s := range in {
		u, msg := d.rootURI(s)
		if msg != "" {
			d.errAt(child(path, elem(i)), "%s", msg)
			continue
		}
		out = append(out, u)
	}
	return out
}

// rootURI makes a root entry a file:// URI, or says what is wrong with it.
func (d *decoder) rootURI(s string) (string, string) {
	if strings.Contains(s, "://") || strings.HasPrefix(s, "file:") {
		u, err := url.Parse(s)
		if err != nil {
			return "", "invalid root: " + err.Error()
		}
		if u.Scheme != "file" {
			return "", "invalid root " + s + ": want a file:// URI or a path"
		}
		if u.Host != "" && u.Host != "localhost" {
			return "", "invalid root " + s + ": a file:// URI names no host (file:///path)"
		}
		if u.Path == "" || !strings.HasPrefix(u.Path, "/") {
			return "", "invalid root " + s + ": want an absolute path (file:///path)"
		}
		u.Host = ""
		return u.String(), ""
	}
	p := filepath.Clean(d.resolvePath(s))
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String(), ""
}
