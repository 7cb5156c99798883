package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
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
	DefaultMaxThreads         = 10000 // the Go runtime's own default
)

// The range of host.max_threads.
const (
	MinMaxThreads = 1000
	MaxMaxThreads = 1000000
)

// Load reads the file at path and parses it with Parse.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	// One byte past MaxSize is enough for Parse to refuse the file.
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
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
	if len(data) > MaxSize {
		return nil, Errors{&Error{File: name, Line: 1, Col: 1, Msg: fmt.Sprintf("the config is more than %d bytes (%d MiB)", MaxSize, MaxSize>>20)}}
	}
	if e := checkNesting(name, data); e != nil {
		return nil, Errors{e}
	}
	ix := newIndex(data)
	doc, err := buildDocument(data, ix)
	if err != nil {
		return nil, Errors{d.documentError(ix, err)}
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
	file, dir   string
	ix          *index
	errs        Errors
	toolings    map[string]bool // names declared under [tooling], valid or not
	providers   map[string]bool // names declared under [provider], valid or not
	componentAt map[string]pos  // where each agent's component is written
}

func (d *decoder) errAt(path []string, format string, args ...any) {
	p := d.ix.lookup(path)
	d.errs = append(d.errs, &Error{File: d.file, Line: p.line, Col: p.col, Key: displayPath(path), Msg: fmt.Sprintf(format, args...)})
}

// documentError converts buildDocument's error, positioned by ix.
func (d *decoder) documentError(ix *index, err error) *Error {
	e := &Error{File: d.file, Msg: err.Error()}
	var de *docError
	if errors.As(err, &de) {
		p := ix.offsetPos(de.off)
		e.Line, e.Col, e.Key = p.line, p.col, displayPath(de.path)
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
	c := &Config{Path: d.file, Tooling: map[string]*Tooling{}, Agent: map[string]*Agent{}, Provider: map[string]*Provider{},
		componentAt: map[string]pos{}}
	d.toolings, d.providers, d.componentAt = map[string]bool{}, map[string]bool{}, c.componentAt
	if tm, ok := doc["tooling"].(map[string]any); ok {
		for k := range tm {
			d.toolings[k] = true
		}
	}
	if pm, ok := doc["provider"].(map[string]any); ok {
		for k := range pm {
			d.providers[k] = true
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
		"provider": func(p []string, v any) {
			m, ok := d.asTable(p, v)
			if !ok {
				return
			}
			for _, name := range sortedKeys(m) {
				if pr := d.provider(child(p, name), name, m[name]); pr != nil {
					c.Provider[name] = pr
				}
			}
		},
		"cluster": func(p []string, v any) { c.Cluster = d.cluster(p, v) },
		"peer": func(p []string, v any) {
			agents, _ := doc["agent"].(map[string]any)
			c.Peer = d.peers(p, v, agents)
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
	if c.Host.MaxThreads == 0 {
		c.Host.MaxThreads = DefaultMaxThreads
	}
	setDefaultDuration(&c.Host.MessageRetention, DefaultRetention)
	d.checkStore(c)
	d.checkExposed(c)
	for _, t := range c.Tooling {
		if t.OAuth != nil {
			t.OAuth.StateDir = c.Host.StateDir
		}
	}
	return c
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
