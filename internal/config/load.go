package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// Defaults applied to keys the file leaves out. `toolhostd config default`
// prints them.
const (
	DefaultLogLevel           = "info"
	DefaultLogFormat          = "console"
	DefaultKind               = "mcp"
	DefaultConnectTimeout     = 10 * time.Second
	DefaultCallTimeout        = 60 * time.Second
	DefaultMaxConcurrentCalls = 16
	DefaultInitialBackoff     = 250 * time.Millisecond
	DefaultMaxBackoff         = 30 * time.Second
	DefaultHealthyAfter       = 60 * time.Second
	DefaultAgentRestart       = "on-failure"
	DefaultAgentBackoffInit   = time.Second
	DefaultAgentBackoffMax    = time.Minute
	DefaultInboxCapacity      = 1024
	DefaultStopGrace          = 10 * time.Second
	DefaultLogRate            = 1000  // guest log lines per second
	DefaultLogBurst           = 10000 // guest log lines at once
)

// Load reads the file at path and parses it with Parse.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes data strictly (unknown keys are errors), fills defaults and
// validates. name is used in error positions and as Config.Path; relative
// cwd, component and cache_dir paths are resolved against its directory (the
// working directory when name is ""). On failure the error is an Errors
// listing every problem found, in document order.
func Parse(name string, data []byte) (*Config, error) {
	d := &decoder{file: name, dir: baseDir(name)}
	if e := checkNesting(name, data); e != nil {
		return nil, Errors{e}
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, Errors{d.tomlError(data, err)}
	}
	ix, err := buildIndex(data)
	if err != nil { // toml.Unmarshal accepted the document: should not happen
		return nil, Errors{&Error{File: name, Msg: "toml: " + err.Error()}}
	}
	d.ix = ix
	c := d.config(doc)
	if len(d.errs) > 0 {
		slices.SortStableFunc(d.errs, func(a, b *Error) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			if a.Col != b.Col {
				return a.Col - b.Col
			}
			return strings.Compare(a.Key, b.Key)
		})
		return nil, d.errs
	}
	return c, nil
}

// CacheDir is host.cache_dir, else $XDG_CACHE_HOME/toolhostd, else
// ~/.cache/toolhostd (else a toolhostd directory in the system temp dir).
func (c *Config) CacheDir() string {
	if c != nil && c.Host.CacheDir != "" {
		return c.Host.CacheDir
	}
	if x := os.Getenv("XDG_CACHE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "toolhostd")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".cache", "toolhostd")
	}
	return filepath.Join(os.TempDir(), "toolhostd-cache")
}

func baseDir(name string) string {
	if name == "" {
		if wd, err := os.Getwd(); err == nil {
			return wd
		}
		return "."
	}
	if abs, err := filepath.Abs(name); err == nil {
		return filepath.Dir(abs)
	}
	return filepath.Dir(name)
}

// decoder turns the generic document into a Config, collecting every error
// with its position.
type decoder struct {
	file, dir string
	ix        *index
	errs      Errors
	toolings  map[string]bool // names declared under [tooling], valid or not
}

func (d *decoder) errAt(path []string, format string, args ...any) {
	p := d.ix.lookup(path)
	d.errs = append(d.errs, &Error{File: d.file, Line: p.line, Col: p.col, Key: displayPath(path), Msg: fmt.Sprintf(format, args...)})
}

// tomlError converts go-toml's error. Its key is relative to the table open
// at the error; when the document parses (a semantic error such as a
// duplicate key) the table headers make it a full path.
func (d *decoder) tomlError(data []byte, err error) *Error {
	e := &Error{File: d.file, Msg: strings.TrimPrefix(err.Error(), "toml: ")}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		e.Line, e.Col = de.Position()
		key := []string(de.Key())
		if ix, perr := buildIndex(data); perr == nil && len(key) > 0 {
			key = ix.qualify(e.Line, key)
		}
		e.Key = displayPath(key)
	}
	return e
}

// erred reports whether an error about path (or inside it) was recorded
// since the since'th error.
func (d *decoder) erred(path []string, since int) bool {
	key := displayPath(path)
	for _, e := range d.errs[since:] {
		if e.Key == key || strings.HasPrefix(e.Key, key+".") || strings.HasPrefix(e.Key, key+"[") {
			return true
		}
	}
	return false
}

func child(path []string, k string) []string {
	return append(path[:len(path):len(path)], k)
}

// handlers maps the keys of one table to their decoders.
type handlers map[string]func(path []string, v any)

// fields runs the handler of each key of m and reports unknown keys.
func (d *decoder) fields(path []string, m map[string]any, h handlers) {
	for _, k := range sortedKeys(m) {
		f, ok := h[k]
		if !ok {
			msg := "unknown key"
			if s := suggest(k, h); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			d.errAt(child(path, k), "%s", msg)
			continue
		}
		f(child(path, k), m[k])
	}
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	default:
		return "a date/time"
	}
}

func (d *decoder) asTable(path []string, v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		d.errAt(path, "want a table, got %s", typeName(v))
	}
	return m, ok
}

func (d *decoder) asString(path []string, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		d.errAt(path, "want a string, got %s", typeName(v))
	}
	return s, ok
}

func (d *decoder) asInt(path []string, v any, min int64) (int, bool) {
	n, ok := v.(int64)
	if !ok {
		d.errAt(path, "want an integer, got %s", typeName(v))
		return 0, false
	}
	if n < min {
		d.errAt(path, "must be at least %d, got %d", min, n)
		return 0, false
	}
	if n > math.MaxInt32 {
		d.errAt(path, "%d is too large", n)
		return 0, false
	}
	return int(n), true
}

// asRefString is a string whose ${...} references are expanded at use.
func (d *decoder) asRefString(path []string, v any) (string, bool) {
	s, ok := d.asString(path, v)
	if ok {
		if err := checkRefs(s); err != nil {
			d.errAt(path, "%v", err)
			return "", false
		}
	}
	return s, ok
}

// asPlainString is a string in which ${...} references are not expanded.
func (d *decoder) asPlainString(path []string, v any) (string, bool) {
	s, ok := d.asString(path, v)
	if ok && HasRefs(s) {
		d.errAt(path, "${...} references are not expanded here (only in command, args, env, url and headers); write $${ for a literal ${")
		return "", false
	}
	return s, ok
}

func (d *decoder) asStrings(path []string, v any, each func(path []string, s string) bool) ([]string, bool) {
	arr, ok := v.([]any)
	if !ok {
		d.errAt(path, "want an array of strings, got %s", typeName(v))
		return nil, false
	}
	out := make([]string, 0, len(arr))
	good := true
	for i, e := range arr {
		p := child(path, elem(i))
		s, ok := d.asString(p, e)
		if ok && each != nil {
			ok = each(p, s)
		}
		good = good && ok
		out = append(out, s)
	}
	return out, good
}

// asStringMap decodes a table of strings; key checks the key, value
// decoding uses asRefString.
func (d *decoder) asStringMap(path []string, v any, key func(string) string) (map[string]string, bool) {
	m, ok := d.asTable(path, v)
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(m))
	good := true
	for _, k := range sortedKeys(m) {
		p := child(path, k)
		if msg := key(k); msg != "" {
			d.errAt(p, "%s", msg)
			good = false
		}
		s, ok := d.asRefString(p, m[k])
		good = good && ok
		out[k] = s
	}
	return out, good
}

// asDuration decodes a duration string; positive demands > 0.
func (d *decoder) asDuration(path []string, v any, positive bool) (Duration, bool) {
	s, ok := v.(string)
	if !ok {
		d.errAt(path, "want a duration string such as \"10s\", got %s", typeName(v))
		return Duration{}, false
	}
	x, err := parseDuration(s)
	if err != nil {
		d.errAt(path, "%v", err)
		return Duration{}, false
	}
	if positive && x == 0 {
		d.errAt(path, "must be positive")
		return Duration{}, false
	}
	return Duration{x}, true
}

func (d *decoder) asEnum(path []string, v any, allowed ...string) (string, bool) {
	s, ok := d.asString(path, v)
	if ok && !slices.Contains(allowed, s) {
		d.errAt(path, "%q is not one of %s", s, strings.Join(allowed, ", "))
		return "", false
	}
	return s, ok
}

// resolvePath makes a relative path relative to the config's directory.
func (d *decoder) resolvePath(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(d.dir, p)
}

// validName reports whether s is a tooling or agent name: letters, digits,
// '-' and '_'.
func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func envKey(k string) string {
	if k == "" || strings.ContainsAny(k, "=\x00") {
		return "invalid environment variable name (empty, or contains '=' or NUL)"
	}
	return ""
}

func headerKey(k string) string {
	if k == "" {
		return "empty header name"
	}
	for _, c := range k {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", c) {
			return "invalid HTTP header name"
		}
	}
	return ""
}

// suggest returns the known key closest to k (edit distance at most 2).
func suggest(k string, h handlers) string {
	best, bestD := "", 3
	for _, cand := range sortedKeys(h) {
		if dist := editDistance(k, cand); dist < bestD {
			best, bestD = cand, dist
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func (d *decoder) config(doc map[string]any) *Config {
	c := &Config{Path: d.file, Tooling: map[string]*Tooling{}, Agent: map[string]*Agent{}}
	d.toolings = map[string]bool{}
	if tm, ok := doc["tooling"].(map[string]any); ok {
		for k := range tm {
			d.toolings[k] = true
		}
	}
	versionSet := false
	d.fields(nil, doc, handlers{
		"version": func(p []string, v any) {
			versionSet = true
			n, ok := v.(int64)
			switch {
			case !ok:
				d.errAt(p, "want the integer 1, got %s", typeName(v))
			case n != 1:
				d.errAt(p, "unsupported version %d (this toolhostd reads version 1)", n)
			default:
				c.Version = 1
			}
		},
		"host": func(p []string, v any) {
			if m, ok := d.asTable(p, v); ok {
				d.host(p, m, &c.Host)
			}
		},
		"tooling": func(p []string, v any) {
			m, ok := d.asTable(p, v)
			if !ok {
				return
			}
			for _, name := range sortedKeys(m) {
				if t := d.tooling(child(p, name), name, m[name]); t != nil {
					c.Tooling[name] = t
				}
			}
		},
		"agent": func(p []string, v any) {
			m, ok := d.asTable(p, v)
			if !ok {
				return
			}
			for _, name := range sortedKeys(m) {
				if a := d.agent(child(p, name), name, m[name]); a != nil {
					c.Agent[name] = a
				}
			}
		},
	})
	if !versionSet {
		d.errAt([]string{"version"}, "missing; the file must start with version = 1")
	}
	if c.Host.LogLevel == "" {
		c.Host.LogLevel = DefaultLogLevel
	}
	if c.Host.LogFormat == "" {
		c.Host.LogFormat = DefaultLogFormat
	}
	for _, t := range c.Tooling {
		if t.OAuth != nil {
			t.OAuth.StateDir = c.Host.StateDir
		}
	}
	return c
}

func (d *decoder) host(path []string, m map[string]any, h *Host) {
	d.fields(path, m, handlers{
		"log_level": func(p []string, v any) {
			h.LogLevel, _ = d.asEnum(p, v, "debug", "info", "warn", "error")
		},
		"log_format": func(p []string, v any) {
			h.LogFormat, _ = d.asEnum(p, v, "console", "json")
		},
		"cache_dir": func(p []string, v any) {
			s, _ := d.asPlainString(p, v)
			h.CacheDir = d.resolvePath(s)
		},
		"control_socket": func(p []string, v any) {
			s, _ := d.asPlainString(p, v)
			h.ControlSocket = d.resolvePath(s)
		},
		"control_listen": func(p []string, v any) {
			s, ok := d.asPlainString(p, v)
			if !ok || s == "" {
				return
			}
			if msg := checkListen(s); msg != "" {
				d.errAt(p, "%s", msg)
				return
			}
			h.ControlListen = s
		},
		"control_token": func(p []string, v any) {
			h.ControlToken, _ = d.asRefString(p, v)
		},
		"audit_log": func(p []string, v any) { h.AuditLog = d.auditLog(p, v) },
		"state_dir": func(p []string, v any) {
			s, _ := d.asPlainString(p, v)
			h.StateDir = d.resolvePath(s)
		},
	})
	// An empty string is the same as the key left out (no TCP, no token).
	if h.ControlListen != "" && h.ControlToken == "" && !d.erred(child(path, "control_token"), 0) {
		d.errAt(child(path, "control_listen"), "needs control_token: the control API is never served on TCP without a bearer token")
	}
}

// checkListen validates a TCP listen address: host:port with a port from 1
// to 65535. It returns a message, "" when addr is good.
func checkListen(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("invalid address %q: want host:port, e.g. \"127.0.0.1:7070\"", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Sprintf("invalid port %q: want a number from 1 to 65535", port)
	}
	return ""
}

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

func (d *decoder) agent(path []string, name string, v any) *Agent {
	m, ok := d.asTable(path, v)
	if !ok {
		return nil
	}
	if !validName(name) {
		d.errAt(path, "invalid agent name: use 1 to 64 letters, digits, '-' and '_'")
	}
	a := &Agent{Name: name}
	_, graceSet := m["stop_grace"]
	var backoffSet, logRateSet bool
	d.fields(path, m, handlers{
		"component": func(p []string, v any) {
			s, ok := d.asPlainString(p, v)
			if ok && s == "" {
				d.errAt(p, "must not be empty")
			}
			a.Component = d.resolvePath(s)
		},
		"toolings": func(p []string, v any) {
			seen := map[string]bool{}
			a.Toolings, _ = d.asStrings(p, v, func(p []string, s string) bool {
				switch {
				case !d.toolings[s]:
					d.errAt(p, "no tooling named %q%s", s, d.knownToolings())
					return false
				case seen[s]:
					d.errAt(p, "%q is granted twice", s)
					return false
				}
				seen[s] = true
				return true
			})
		},
		"input": func(p []string, v any) {
			a.Input, _ = d.asString(p, v)
		},
		"env": func(p []string, v any) {
			a.Env, _ = d.asStringMap(p, v, envKey)
		},
		"restart": func(p []string, v any) {
			a.Restart, _ = d.asEnum(p, v, "never", "on-failure", "always")
		},
		"restart_backoff": func(p []string, v any) {
			bm, ok := d.asTable(p, v)
			if !ok {
				return
			}
			backoffSet = true
			d.fields(p, bm, handlers{
				"initial": func(p []string, v any) { a.RestartBackoff.Initial, _ = d.asDuration(p, v, true) },
				"max":     func(p []string, v any) { a.RestartBackoff.Max, _ = d.asDuration(p, v, true) },
			})
		},
		"inbox_capacity": func(p []string, v any) {
			a.InboxCapacity, _ = d.asInt(p, v, 1)
		},
		"limits": func(p []string, v any) {
			lm, ok := d.asTable(p, v)
			if !ok {
				return
			}
			d.fields(p, lm, handlers{
				"memory": func(p []string, v any) {
					switch x := v.(type) {
					case int64:
						if x < 0 {
							d.errAt(p, "must not be negative")
							return
						}
						a.Limits.Memory = ByteSize(x)
					case string:
						b, err := ParseByteSize(x)
						if err != nil {
							d.errAt(p, "%v", err)
							return
						}
						a.Limits.Memory = b
					default:
						d.errAt(p, "want a size such as \"256MiB\" or an integer, got %s", typeName(v))
					}
				},
				"fuel": func(p []string, v any) {
					x, ok := v.(int64)
					switch {
					case !ok:
						d.errAt(p, "want an integer, got %s", typeName(v))
					case x < 0:
						d.errAt(p, "must not be negative")
					default:
						a.Limits.Fuel = uint64(x)
					}
				},
				"run_timeout": func(p []string, v any) { a.Limits.RunTimeout, _ = d.asDuration(p, v, false) },
				"log_rate":    func(p []string, v any) { logRateSet = d.logRate(p, v, &a.Limits.LogRate) },
				"log_burst":   func(p []string, v any) { a.Limits.LogBurst, _ = d.asInt(p, v, 1) },
			})
		},
		"stop_grace": func(p []string, v any) {
			a.StopGrace, _ = d.asDuration(p, v, false)
		},
		"grants": func(p []string, v any) { a.Grants = d.grants(p, v) },
	})
	d.checkGrants(path, a)
	if _, ok := m["component"]; !ok {
		d.errAt(child(path, "component"), "missing (the agent's WebAssembly component)")
	}
	setDefault(&a.Restart, DefaultAgentRestart)
	initialSet, maxSet := a.RestartBackoff.Initial.Duration != 0, a.RestartBackoff.Max.Duration != 0
	setDefaultDuration(&a.RestartBackoff.Initial, DefaultAgentBackoffInit)
	setDefaultDuration(&a.RestartBackoff.Max, DefaultAgentBackoffMax)
	if backoffSet && (initialSet || maxSet) && a.RestartBackoff.Max.Duration < a.RestartBackoff.Initial.Duration {
		d.errAt(child(child(path, "restart_backoff"), "max"), "max (%s) is less than initial (%s)",
			a.RestartBackoff.Max.Duration, a.RestartBackoff.Initial.Duration)
	}
	if a.InboxCapacity == 0 {
		a.InboxCapacity = DefaultInboxCapacity
	}
	if !graceSet {
		a.StopGrace = Duration{DefaultStopGrace}
	}
	if !logRateSet {
		a.Limits.LogRate = DefaultLogRate
	}
	if a.Limits.LogBurst == 0 {
		a.Limits.LogBurst = DefaultLogBurst
	}
	return a
}

// logRate decodes limits.log_rate (lines per second, an integer or a
// float, 0 for unlimited) and reports whether it was valid.
func (d *decoder) logRate(p []string, v any, out *float64) bool {
	var x float64
	switch n := v.(type) {
	case int64:
		x = float64(n)
	case float64:
		x = n
	default:
		d.errAt(p, "want a number of lines per second (0: unlimited), got %s", typeName(v))
		return false
	}
	if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		d.errAt(p, "must be a non-negative number (0: unlimited)")
		return false
	}
	*out = x
	return true
}

func (d *decoder) knownToolings() string {
	if len(d.toolings) == 0 {
		return " (the file defines no toolings)"
	}
	return " (defined: " + strings.Join(sortedKeys(d.toolings), ", ") + ")"
}

func setDefault(s *string, def string) {
	if *s == "" {
		*s = def
	}
}

func setDefaultDuration(d *Duration, def time.Duration) {
	if d.Duration == 0 {
		d.Duration = def
	}
}
