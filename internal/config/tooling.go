package config

// The [tooling.<name>] tables.

import (
	"net/url"
)

func (d *decoder) tooling(path []string, name string, v any) *Tooling {
	m, ok := d.asTable(path, v)
	if !ok {
		return nil
	}
	if !validName(name) {
		d.errAt(path, "invalid tooling name: use 1 to 64 letters, digits, '-' and '_'")
	}
	t := &Tooling{Name: name}
	n0 := len(d.errs)
	var restartSet bool
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
			restartSet = true
			d.fields(p, rm, handlers{
				"initial_backoff": func(p []string, v any) { t.Restart.InitialBackoff, _ = d.asDuration(p, v, true) },
				"max_backoff":     func(p []string, v any) { t.Restart.MaxBackoff, _ = d.asDuration(p, v, true) },
				"healthy_after":   func(p []string, v any) { t.Restart.HealthyAfter, _ = d.asDuration(p, v, true) },
			})
		},
		"oauth": func(p []string, v any) { t.OAuth = d.oauth(p, v) },
	}
	sessionDefaults := d.toolingSession(t, hs)
	d.fields(path, m, hs)
	sessionDefaults()

	// Defaults.
	setDefault(&t.Kind, DefaultKind)
	setDefault(&t.Elicitation, ElicitationDecline)
	setDefaultDuration(&t.ConnectTimeout, DefaultConnectTimeout)
	setDefaultDuration(&t.CallTimeout, DefaultCallTimeout)
	if t.MaxConcurrentCalls == 0 {
		t.MaxConcurrentCalls = DefaultMaxConcurrentCalls
	}
	initialSet, maxSet := t.Restart.InitialBackoff.Duration != 0, t.Restart.MaxBackoff.Duration != 0
	setDefaultDuration(&t.Restart.InitialBackoff, DefaultInitialBackoff)
	setDefaultDuration(&t.Restart.MaxBackoff, DefaultMaxBackoff)
	setDefaultDuration(&t.Restart.HealthyAfter, DefaultHealthyAfter)
	if restartSet && (initialSet || maxSet) && t.Restart.MaxBackoff.Duration < t.Restart.InitialBackoff.Duration {
		d.errAt(child(child(path, "restart"), "max_backoff"), "max_backoff (%s) is less than initial_backoff (%s)",
			t.Restart.MaxBackoff.Duration, t.Restart.InitialBackoff.Duration)
	}

	// Transport: stdio runs command; http and sse connect to url. A key
	// that already has an error is not reported again as missing.
	_, transportSet := m["transport"]
	missing := func(k, msg string, args ...any) {
		if d.erred(child(path, k), n0) {
			return
		}
		if _, present := m[k]; present {
			d.errAt(child(path, k), "must not be empty")
			return
		}
		d.errAt(child(path, k), msg, args...)
	}
	switch {
	case !transportSet && t.Command != "" && t.URL != "":
		d.errAt(child(path, "url"), "both command and url are set: a tooling runs a command (stdio) or connects to a url (http, sse), not both")
	case !transportSet && t.Command == "" && t.URL == "":
		_, hasCmd := m["command"]
		_, hasURL := m["url"]
		switch {
		case hasCmd:
			missing("command", "")
		case hasURL:
			missing("url", "")
		default:
			d.errAt(path, "set command (for a stdio server) or url (for an http or sse server)")
		}
	case !transportSet && t.Command != "":
		t.Transport = "stdio"
	case !transportSet:
		t.Transport = "http"
	}
	switch t.Transport {
	case "stdio":
		if t.Command == "" {
			missing("command", "missing (transport stdio runs a command)")
		}
		if t.URL != "" && transportSet {
			d.errAt(child(path, "url"), "not used by transport stdio")
		}
		if len(t.Headers) > 0 {
			d.errAt(child(path, "headers"), "only used by transports http and sse")
		}
	case "http", "sse":
		if t.URL == "" {
			missing("url", "missing (transport %s connects to a url)", t.Transport)
		} else if !HasRefs(t.URL) {
			if u, err := url.Parse(t.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				d.errAt(child(path, "url"), "invalid url: want http:// or https:// and a host")
			}
		}
		if t.Command != "" && transportSet {
			d.errAt(child(path, "command"), "not used by transport %s", t.Transport)
		}
		for k, set := range map[string]bool{"args": len(t.Args) > 0, "env": len(t.Env) > 0, "cwd": t.Cwd != ""} {
			if set {
				d.errAt(child(path, k), "only used by transport stdio")
			}
		}
	}
	d.checkOAuth(path, t)
	return t
}
