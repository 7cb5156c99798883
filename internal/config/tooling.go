package config

// The [tooling.<name>] tables.

import (
	"net/url"
)

// tooling decodes one [tooling.<name>] table, fills the defaults of the
// keys it leaves out and checks the keys that depend on each other.
func (d *decoder) tooling(path []string, name string, v any) *Tooling {
	m, ok := d.asTable(path, v)
	if !ok {
		return nil
	}
	if !validName(name) {
		d.errAt(path, "invalid tooling name: use 1 to 64 letters, digits, '-' and '_'")
	}
	n0 := len(d.errs)
	t, sessionDefaults := d.toolingKeys(path, name, m)
	given := t.Restart // the backoffs as the file gives them
	sessionDefaults()
	toolingDefaults(t)
	d.checkBackoff(path, given, t.Restart)
	d.checkTransport(path, m, t, n0)
	d.checkOAuth(path, t)
	return t
}

// toolingKeys decodes the keys of the table m; the function it returns
// fills the defaults of the session keys (see toolingSession).
func (d *decoder) toolingKeys(path []string, name string, m map[string]any) (t *Tooling, sessionDefaults func()) {
	t = &Tooling{Name: name}
	hs := handlers{
		"kind": func(p []string, v any) {
			t.Kind, _ = d.asEnum(p, v, "mcp")
		},
		"transport": func(p []string, v any) {
			t.Transport, _ = d.asEnum(p, v, "stdio", "http", "sse")
		},
		"command": func(p []string, v any) {
			t.Command, _ = d.asRefString(p, v)
		},
		"args": func(p []string, v any) {
			t.Args, _ = d.asStrings(p, v, func(p []string, s string) bool {
				if err := checkRefs(s); err != nil {
					d.errAt(p, "%v", err)
					return false
				}
				return true
			})
		},
		"env": func(p []string, v any) {
			t.Env, _ = d.asStringMap(p, v, envKey)
		},
		"cwd": func(p []string, v any) {
			s, _ := d.asPlainString(p, v)
			t.Cwd = d.resolvePath(s)
		},
		"url": func(p []string, v any) {
			t.URL, _ = d.asRefString(p, v)
		},
		"headers": func(p []string, v any) {
			t.Headers, _ = d.asStringMap(p, v, headerKey)
		},
		"connect_timeout": func(p []string, v any) {
			t.ConnectTimeout, _ = d.asDuration(p, v, true)
		},
		"call_timeout": func(p []string, v any) {
			t.CallTimeout, _ = d.asDuration(p, v, true)
		},
		"max_concurrent_calls": func(p []string, v any) {
			t.MaxConcurrentCalls, _ = d.asInt(p, v, 1)
		},
		"roots": func(p []string, v any) {
			if r, ok := d.roots(p, v); ok || len(r) > 0 {
				t.Roots = d.rootURIs(p, r)
			}
		},
		"elicitation": func(p []string, v any) { t.Elicitation, _ = d.asEnum(p, v, ElicitationPolicies...) },
		"sampling":    func(p []string, v any) { t.Sampling = d.sampling(p, v) },
		"log_level":   func(p []string, v any) { t.LogLevel, _ = d.asEnum(p, v, MCPLogLevels...) },
		"restart": func(p []string, v any) {
			rm, ok := d.asTable(p, v)
			if !ok {
				return
			}
			d.fields(p, rm, handlers{
				"initial_backoff": func(p []string, v any) { t.Restart.InitialBackoff, _ = d.asDuration(p, v, true) },
				"max_backoff":     func(p []string, v any) { t.Restart.MaxBackoff, _ = d.asDuration(p, v, true) },
				"healthy_after":   func(p []string, v any) { t.Restart.HealthyAfter, _ = d.asDuration(p, v, true) },
			})
		},
		"oauth": func(p []string, v any) { t.OAuth = d.oauth(p, v) },
	}
	sessionDefaults = d.toolingSession(t, hs)
	d.fields(path, m, hs)
	return t, sessionDefaults
}

// toolingDefaults fills the keys of t the file left out (but the session
// keys and transport: toolingSession, checkTransport).
func toolingDefaults(t *Tooling) {
	setDefault(&t.Kind, DefaultKind)
	setDefault(&t.Elicitation, ElicitationDecline)
	setDefaultDuration(&t.ConnectTimeout, DefaultConnectTimeout)
	setDefaultDuration(&t.CallTimeout, DefaultCallTimeout)
	if t.MaxConcurrentCalls == 0 {
		t.MaxConcurrentCalls = DefaultMaxConcurrentCalls
	}
	setDefaultDuration(&t.Restart.InitialBackoff, DefaultInitialBackoff)
	setDefaultDuration(&t.Restart.MaxBackoff, DefaultMaxBackoff)
	setDefaultDuration(&t.Restart.HealthyAfter, DefaultHealthyAfter)
}

// checkBackoff: a restart table that sets a backoff must not leave
// max_backoff below initial_backoff (the one it leaves out defaulted). given
// is the restart table as the file gives it (only it sets the backoffs),
// r as defaulted.
func (d *decoder) checkBackoff(path []string, given, r Restart) {
	if given.InitialBackoff.Duration == 0 && given.MaxBackoff.Duration == 0 {
		return
	}
	if r.MaxBackoff.Duration < r.InitialBackoff.Duration {
		d.errAt(child(child(path, "restart"), "max_backoff"), "max_backoff (%s) is less than initial_backoff (%s)",
			r.MaxBackoff.Duration, r.InitialBackoff.Duration)
	}
}

// checkTransport infers a tooling's transport when the file leaves it out
// (stdio runs command; http and sse connect to url) and checks that the
// keys present are the transport's. A key that already has an error (since
// the n0'th) is not reported again as missing.
func (d *decoder) checkTransport(path []string, m map[string]any, t *Tooling, n0 int) {
	_, transportSet := m["transport"]
	if !transportSet {
		d.inferTransport(path, m, t, n0)
	}
	switch t.Transport {
	case "stdio":
		if t.Command == "" {
			d.missing(path, m, n0, "command", "missing (transport stdio runs a command)")
		}
		if t.URL != "" && transportSet {
			d.errAt(child(path, "url"), "not used by transport stdio")
		}
		if len(t.Headers) > 0 {
			d.errAt(child(path, "headers"), "only used by transports http and sse")
		}
	case "http", "sse":
		d.checkURL(path, m, t, n0)
		if t.Command != "" && transportSet {
			d.errAt(child(path, "command"), "not used by transport %s", t.Transport)
		}
		for k, set := range map[string]bool{"args": len(t.Args) > 0, "env": len(t.Env) > 0, "cwd": t.Cwd != ""} {
			if set {
				d.errAt(child(path, k), "only used by transport stdio")
			}
		}
	}
}

// inferTransport sets the transport of a table without one from the keys
// it has: stdio for a command, http for a url.
func (d *decoder) inferTransport(path []string, m map[string]any, t *Tooling, n0 int) {
	switch {
	case t.Command != "" && t.URL != "":
		d.errAt(child(path, "url"), "both command and url are set: a tooling runs a command (stdio) or connects to a url (http, sse), not both")
	case t.Command == "" && t.URL == "":
		_, hasCmd := m["command"]
		_, hasURL := m["url"]
		switch {
		case hasCmd:
			d.missing(path, m, n0, "command", "")
		case hasURL:
			d.missing(path, m, n0, "url", "")
		default:
			d.errAt(path, "set command (for a stdio server) or url (for an http or sse server)")
		}
	case t.Command != "":
		t.Transport = "stdio"
	default:
		t.Transport = "http"
	}
}

// checkURL checks the url an http or sse tooling connects to.
func (d *decoder) checkURL(path []string, m map[string]any, t *Tooling, n0 int) {
	switch {
	case t.URL == "":
		d.missing(path, m, n0, "url", "missing (transport %s connects to a url)", t.Transport)
	case !HasRefs(t.URL):
		if u, err := url.Parse(t.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			d.errAt(child(path, "url"), "invalid url: want http:// or https:// and a host")
		}
	}
}

// missing reports the key k of the table m (at path) as missing with msg,
// or as empty when it is present; not when it already has an error since
// the n0'th.
func (d *decoder) missing(path []string, m map[string]any, n0 int, k, msg string, args ...any) {
	if d.erred(child(path, k), n0) {
		return
	}
	if _, present := m[k]; present {
		d.errAt(child(path, k), "must not be empty")
		return
	}
	d.errAt(child(path, k), msg, args...)
}
