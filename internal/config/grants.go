package config

import (
	"fmt"
	"slices"
	"strings"
)

// Grant is one [agent.<name>.grants.<tooling>] table: the narrowing of a
// whole-tooling grant. Patterns are globs (see internal/policy): `*` any
// run of characters but '/', `**` any run, `?` one character but '/'.
type Grant struct {
	Tools              []string `toml:"tools,omitzero"`      // nil: every tool
	DenyTools          []string `toml:"deny_tools,omitzero"` // applied after tools
	Resources          []string `toml:"resources,omitzero"`  // uri globs; nil: every resource
	MaxConcurrentCalls int      `toml:"max_concurrent_calls,omitzero"`
	CallsPerSecond     float64  `toml:"calls_per_second,omitzero"`
	AuditArguments     bool     `toml:"audit_arguments,omitzero"`

	// The keys of a provider grant, so that go-toml's own decoder reads
	// an agent's grants table whole. Parse decodes the grants of
	// providers into Agent.ProviderGrants: here they are always zero.
	Models            []string `toml:"models,omitzero" json:"-"`
	RequestsPerMinute float64  `toml:"requests_per_minute,omitzero" json:"-"`
	TokensPerHour     int64    `toml:"tokens_per_hour,omitzero" json:"-"`
	TokensPerDay      int64    `toml:"tokens_per_day,omitzero" json:"-"`
	MaxTokens         int      `toml:"max_tokens,omitzero" json:"-"`
}

// grants decodes an agent's grants table: a key naming a provider is a
// provider grant, any other a tooling grant; each must be in the agent's
// toolings or providers list (checked by the caller once known).
func (d *decoder) grants(path []string, v any) (map[string]*Grant, map[string]*ProviderGrant) {
	m, ok := d.asTable(path, v)
	if !ok {
		return nil, nil
	}
	out := make(map[string]*Grant, len(m))
	var prov map[string]*ProviderGrant
	for _, name := range sortedKeys(m) {
		if d.providers[name] && !d.toolings[name] {
			if g := d.providerGrant(child(path, name), m[name]); g != nil {
				if prov == nil {
					prov = map[string]*ProviderGrant{}
				}
				prov[name] = g
			}
			continue
		}
		if g := d.grant(child(path, name), m[name]); g != nil {
			out[name] = g
		}
	}
	return out, prov
}

func (d *decoder) grant(path []string, v any) *Grant {
	m, ok := d.asTable(path, v)
	if !ok {
		return nil
	}
	g := &Grant{}
	patterns := func(p []string, v any) []string {
		ps, _ := d.asStrings(p, v, func(p []string, s string) bool {
			if msg := checkPattern(s); msg != "" {
				d.errAt(p, "%s", msg)
				return false
			}
			return true
		})
		if ps == nil {
			ps = []string{} // an empty list allows nothing, unlike no list
		}
		return ps
	}
	d.fields(path, m, handlers{
		"tools":      func(p []string, v any) { g.Tools = patterns(p, v) },
		"deny_tools": func(p []string, v any) { g.DenyTools = patterns(p, v) },
		"resources":  func(p []string, v any) { g.Resources = patterns(p, v) },
		"max_concurrent_calls": func(p []string, v any) {
			g.MaxConcurrentCalls, _ = d.asInt(p, v, 1)
		},
		"calls_per_second": func(p []string, v any) { g.CallsPerSecond, _ = d.asRate(p, v) },
		"audit_arguments":  func(p []string, v any) { g.AuditArguments, _ = d.asBool(p, v) },
	})
	return g
}

// checkPattern validates a grant glob; it returns a message, "" when good.
func checkPattern(s string) string {
	switch {
	case s == "":
		return "an empty pattern matches nothing"
	case strings.Contains(s, "***"):
		return fmt.Sprintf("%q: use * (within one path segment) or ** (across '/'), not ***", s)
	}
	return ""
}

// checkGrants reports a grants table naming a tooling the agent is not
// granted in its toolings list, or a provider not in its providers list.
func (d *decoder) checkGrants(path []string, a *Agent) {
	for _, name := range sortedKeys(a.ProviderGrants) {
		if !slices.Contains(a.Providers, name) {
			d.errAt(child(child(path, "grants"), name), "limits provider %q, which is not in this agent's providers", name)
		}
	}
	for _, name := range sortedKeys(a.Grants) {
		granted := false
		for _, t := range a.Toolings {
			granted = granted || t == name
		}
		if !granted {
			d.errAt(child(child(path, "grants"), name), "narrows tooling %q, which is not in this agent's toolings", name)
		}
	}
}

// auditLog decodes host.audit_log: "-" is stderr, a path is resolved
// against the config's directory.
func (d *decoder) auditLog(path []string, v any) string {
	s, ok := d.asPlainString(path, v)
	if !ok || s == "" || s == "-" {
		return s
	}
	return d.resolvePath(s)
}
