package config

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with the golden file, or rewrites it under -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it)\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}

func fixtures(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*.toml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in testdata/%s: %v", dir, err)
	}
	return files
}

// TestParseValid decodes each valid fixture and compares the resulting
// Config (defaults filled, paths resolved) with its golden JSON, in which the
// fixture's absolute directory reads $DIR.
func TestParseValid(t *testing.T) {
	for _, file := range fixtures(t, "valid") {
		t.Run(filepath.Base(file), func(t *testing.T) {
			c, err := Load(file)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.Path != file {
				t.Errorf("Path = %q, want %q", c.Path, file)
			}
			b, err := json.MarshalIndent(c, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			abs, err := filepath.Abs(filepath.Dir(file))
			if err != nil {
				t.Fatal(err)
			}
			got := strings.ReplaceAll(string(b), abs, "$DIR")
			got = strings.ReplaceAll(got, filepath.Dir(abs), "$DIR/..") + "\n"
			golden(t, strings.TrimSuffix(file, ".toml")+".golden.json", got)
		})
	}
}

// TestParseInvalid checks the complete, ordered error list of each invalid
// fixture against its golden file.
func TestParseInvalid(t *testing.T) {
	for _, file := range fixtures(t, "invalid") {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Parse(filepath.Base(file), data)
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", c)
			}
			if c != nil {
				t.Errorf("Parse returned a config with its error")
			}
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error is %T, want a non-empty Errors: %v", err, err)
			}
			lines := strings.Split(string(data), "\n")
			for _, e := range errs {
				if e.File != filepath.Base(file) || e.Line < 1 || e.Line > len(lines) || e.Col < 1 || e.Col > len(lines[e.Line-1])+1 {
					t.Errorf("error outside the document: %+v", e)
				}
			}
			golden(t, strings.TrimSuffix(file, ".toml")+".golden", err.Error()+"\n")
		})
	}
}

// TestErrorPositions pins the position rules independently of the goldens:
// an error about a key points at the key, about an array element at the
// element, about a missing key at its table's header.
func TestErrorPositions(t *testing.T) {
	doc := strings.Join([]string{
		`version = 1`,                          // 1
		`[tooling.fs]`,                         // 2
		`  comand = "node"`,                    // 3: unknown key, indented
		`restart = { initial_backoff = "0s" }`, // 4: inline table key
		`[tooling.web]`,                        // 5
		`transport = "http"`,                   // 6: missing url -> the header
		`  [agent.w]`,                          // 7: missing component -> header
		`toolings = ["fs", "nope"]`,            // 8: element
		`limits.memory = "x"`,                  // 9: dotted key, last part
		`env = { "A=B" = "1" }`,                // 10: quoted key
		`tooling.x.command = 5`,                // 11: dotted key inside [agent.w]
	}, "\n")
	_, err := Parse("p.toml", []byte(doc))
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("want Errors, got %v", err)
	}
	want := map[string][2]int{
		"tooling.fs":                         {2, 1},
		"tooling.fs.comand":                  {3, 3},
		"tooling.fs.restart.initial_backoff": {4, 13},
		"tooling.web.url":                    {5, 1},
		"agent.w.component":                  {7, 3},
		"agent.w.toolings[1]":                {8, 19},
		"agent.w.limits.memory":              {9, 8},
		`agent.w.env."A=B"`:                  {10, 9},
		"agent.w.tooling":                    {11, 1},
	}
	got := map[string][2]int{}
	for _, e := range errs {
		got[e.Key] = [2]int{e.Line, e.Col}
	}
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("no error for %s; got:\n%v", k, err)
		} else if g != w {
			t.Errorf("%s at %d:%d, want %d:%d", k, g[0], g[1], w[0], w[1])
		}
	}
	if len(errs) != len(want) {
		t.Errorf("got %d errors, want %d:\n%v", len(errs), len(want), err)
	}
}

func TestErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{File: "toolhostd.toml", Line: 7, Col: 1, Key: "tooling.fs.comand", Msg: "unknown key"}, "toolhostd.toml:7:1: tooling.fs.comand: unknown key"},
		{Error{File: "a.toml", Msg: "read failed"}, "a.toml: read failed"},
		{Error{Line: 2, Col: 3, Msg: "bad"}, "2:3: bad"},
		{Error{Key: "version", Msg: "missing"}, "version: missing"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	es := Errors{{File: "f", Line: 1, Col: 1, Msg: "a"}, {File: "f", Line: 2, Col: 1, Msg: "b"}}
	if got := es.Error(); got != "f:1:1: a\nf:2:1: b" {
		t.Errorf("Errors.Error() = %q", got)
	}
	var e *Error
	if !errors.As(error(es), &e) || e.Msg != "a" {
		t.Errorf("errors.As(Errors, *Error) = %v", e)
	}
}

// TestDefaults checks every default Parse fills in for keys the file leaves
// out, and that explicit values are kept.
func TestDefaults(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	c, err := Parse("/etc/toolhostd/toolhostd.toml", []byte("version = 1\n[tooling.a]\ncommand = \"x\"\n[tooling.b]\nurl = \"http://h/mcp\"\n[agent.w]\ncomponent = \"w.wasm\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Host.LogLevel != "info" || c.Host.LogFormat != "console" || c.Host.CacheDir != "" {
		t.Errorf("host = %+v", c.Host)
	}
	if got := c.CacheDir(); got != "/xdg/toolhostd" {
		t.Errorf("CacheDir() = %q", got)
	}
	a := c.Tooling["a"]
	want := Tooling{
		Name:           "a",
		Kind:           "mcp",
		Transport:      "stdio",
		Restart:        Restart{Duration{250 * time.Millisecond}, Duration{30 * time.Second}, Duration{60 * time.Second}},
		ToolingProcess: ToolingProcess{Command: "x"},
		ToolingCalls:   ToolingCalls{ConnectTimeout: Duration{10 * time.Second}, CallTimeout: Duration{60 * time.Second}, MaxConcurrentCalls: 16},
		ToolingSession: ToolingSession{MaxMessageBytes: 64 << 20, PingInterval: Duration{time.Second}, PingTimeout: Duration{3 * time.Second}},
		ToolingClient:  ToolingClient{Elicitation: "decline"},
	}
	if a == nil || !equalJSON(t, *a, want) {
		t.Errorf("tooling a = %+v\nwant %+v", a, want)
	}
	if b := c.Tooling["b"]; b == nil || b.Transport != "http" || b.Name != "b" {
		t.Errorf("tooling b = %+v", b)
	}
	w := c.Agent["w"]
	wantA := Agent{
		Name:      "w",
		Component: "/etc/toolhostd/w.wasm",
		Messaging: Messaging{Instances: "single", Start: "serve", IdleTimeout: Duration{5 * time.Minute},
			Accepts: []string{"api"}, MaxMessageBytes: 1 << 20},
		AgentStore:   AgentStore{Stores: []string{"*"}},
		AgentRestart: AgentRestart{Restart: "on-failure", RestartBackoff: Backoff{Duration{time.Second}, Duration{time.Minute}}},
		AgentBounds:  AgentBounds{InboxCapacity: 1024, StopGrace: Duration{10 * time.Second}, Limits: Limits{LogRate: 1000, LogBurst: 10000}},
	}
	if w == nil || !equalJSON(t, *w, wantA) {
		t.Errorf("agent w = %+v\nwant %+v", w, wantA)
	}

	// One key of an inline restart table set: the others still default.
	c, err = Parse("", []byte("version = 1\n[tooling.a]\ncommand = \"x\"\nrestart = { max_backoff = \"5s\" }\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Tooling["a"].Restart; r.InitialBackoff.Duration != 250*time.Millisecond || r.MaxBackoff.Duration != 5*time.Second || r.HealthyAfter.Duration != time.Minute {
		t.Errorf("restart = %+v", r)
	}
	// A max_backoff below the default initial_backoff is an error only when
	// the file set the pair inconsistently.
	if _, err := Parse("", []byte("version = 1\n[tooling.a]\ncommand = \"x\"\nrestart = { max_backoff = \"100ms\" }\n")); err == nil {
		t.Errorf("max_backoff 100ms below the default initial 250ms: want an error")
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return string(x) == string(y)
}

func TestCacheDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, tc := range []struct{ xdg, set, want string }{
		{"", "", filepath.Join(home, ".cache", "toolhostd")},
		{"relative/ignored", "", filepath.Join(home, ".cache", "toolhostd")},
		{"/x", "", "/x/toolhostd"},
		{"/x", "/var/cache/th", "/var/cache/th"},
	} {
		t.Setenv("XDG_CACHE_HOME", tc.xdg)
		c := &Config{Host: Host{CacheDir: tc.set}}
		if got := c.CacheDir(); got != tc.want {
			t.Errorf("xdg=%q cache_dir=%q: CacheDir() = %q, want %q", tc.xdg, tc.set, got, tc.want)
		}
	}
	c, err := Parse("/srv/th/toolhostd.toml", []byte("version = 1\n[host]\ncache_dir = \"cache\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.CacheDir(); got != "/srv/th/cache" {
		t.Errorf("relative cache_dir: CacheDir() = %q", got)
	}
}

// TestDefaultConfig: the example printed by `config default` parses, and the
// values it shows for defaulted keys are the defaults.
func TestDefaultConfig(t *testing.T) {
	c, err := Parse("toolhostd.toml", []byte(Default()))
	if err != nil {
		t.Fatalf("Default() does not parse:\n%v", err)
	}
	if len(c.Tooling) != 1 || len(c.Agent) != 1 {
		t.Fatalf("Default() has %d toolings, %d agents", len(c.Tooling), len(c.Agent))
	}
	ev, w := c.Tooling["everything"], c.Agent["watcher"]
	if ev == nil || w == nil {
		t.Fatalf("Default() lacks tooling.everything or agent.watcher")
	}
	d, err := Parse("toolhostd.toml", []byte("version = 1\n[tooling.everything]\ncommand = \"node\"\n[agent.watcher]\ncomponent = \"c.wasm\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	dev, dw := d.Tooling["everything"], d.Agent["watcher"]
	if c.Host != d.Host {
		t.Errorf("host %+v, defaults %+v", c.Host, d.Host)
	}
	if ev.Kind != dev.Kind || ev.Transport != dev.Transport || ev.ConnectTimeout != dev.ConnectTimeout ||
		ev.CallTimeout != dev.CallTimeout || ev.MaxConcurrentCalls != dev.MaxConcurrentCalls || ev.Restart != dev.Restart ||
		ev.MaxMessageBytes != dev.MaxMessageBytes || ev.PingInterval != dev.PingInterval || ev.PingTimeout != dev.PingTimeout {
		t.Errorf("tooling %+v\ndefaults %+v", ev, dev)
	}
	if w.Restart != dw.Restart || w.RestartBackoff != dw.RestartBackoff || w.InboxCapacity != dw.InboxCapacity || w.StopGrace != dw.StopGrace ||
		w.Limits.Fuel != 0 || w.Limits.RunTimeout.Duration != 0 {
		t.Errorf("agent %+v\ndefaults %+v", w, dw)
	}
	// The commented-out http example must be valid once uncommented.
	var b strings.Builder
	for _, line := range strings.Split(Default(), "\n") {
		if strings.HasPrefix(line, "# [tooling.") || strings.HasPrefix(line, "# url") || strings.HasPrefix(line, "# headers") || strings.HasPrefix(line, "# cache_dir") ||
			strings.HasPrefix(line, "# oauth") || strings.HasPrefix(line, "# state_dir") {
			line = strings.TrimPrefix(line, "# ")
		}
		b.WriteString(line + "\n")
	}
	c, err = Parse("toolhostd.toml", []byte(b.String()))
	if err != nil {
		t.Fatalf("Default() with its examples uncommented:\n%v", err)
	}
	if r := c.Tooling["remote"]; r == nil || r.Transport != "http" || r.Headers["Authorization"] != "Bearer ${env:REMOTE_TOKEN}" {
		t.Errorf("uncommented remote tooling = %+v", r)
	}
	if o := c.Tooling["saas"].OAuth; o == nil || o.ClientID != "toolhostd" || o.GrantType != GrantAuthorizationCode || c.StateDir() != "/var/lib/toolhostd" {
		t.Errorf("uncommented oauth example = %+v, state dir %q", o, c.StateDir())
	}
	if c.Host.CacheDir != "/var/cache/toolhostd" {
		t.Errorf("uncommented cache_dir = %q", c.Host.CacheDir)
	}
}

// TestGoTomlStrictAgrees: the struct tags match the keys Parse knows, so a
// valid file also decodes with go-toml's own strict decoder, to the same
// values wherever Parse does not resolve paths or fill defaults.
func TestGoTomlStrictAgrees(t *testing.T) {
	files := append(fixtures(t, "valid"), "")
	for _, file := range files {
		data := []byte(Default())
		if file != "" {
			var err error
			if data, err = os.ReadFile(file); err != nil {
				t.Fatal(err)
			}
		}
		var viaTOML Config
		if err := toml.NewDecoder(strings.NewReader(string(data))).DisallowUnknownFields().Decode(&viaTOML); err != nil {
			t.Errorf("%s: go-toml strict decode: %v", file, err)
			continue
		}
		c, err := Parse(file, data)
		if err != nil {
			t.Fatal(err)
		}
		for name, t1 := range viaTOML.Tooling {
			t2 := c.Tooling[name]
			if t2 == nil || !equalStrings(t1.Args, t2.Args) || t1.Command != t2.Command || t1.URL != t2.URL || len(t1.Env) != len(t2.Env) || len(t1.Headers) != len(t2.Headers) {
				t.Errorf("%s: tooling %s: go-toml %+v, Parse %+v", file, name, t1, t2)
			}
		}
		for name, a1 := range viaTOML.Agent {
			a2 := c.Agent[name]
			if a2 == nil || !equalStrings(a1.Toolings, a2.Toolings) || a1.Input != a2.Input || a1.Limits.Memory != a2.Limits.Memory {
				t.Errorf("%s: agent %s: go-toml %+v, Parse %+v", file, name, a1, a2)
			}
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.toml"))
	if err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "nope.toml") {
		t.Errorf("Load(missing) = %v", err)
	}
}

func TestRelativePaths(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "toolhostd.toml")
	c, err := Parse(path, []byte("version = 1\n[tooling.a]\ncommand = \"x\"\ncwd = \"..\"\n[agent.w]\ncomponent = \"agents/w.wasm\"\n[agent.abs]\ncomponent = \"/w.wasm\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Tooling["a"].Cwd; got != dir {
		t.Errorf("cwd = %q, want %q", got, dir)
	}
	if got := c.Agent["w"].Component; got != filepath.Join(dir, "sub", "agents", "w.wasm") {
		t.Errorf("component = %q", got)
	}
	if got := c.Agent["abs"].Component; got != "/w.wasm" {
		t.Errorf("absolute component = %q", got)
	}
	// Without a name, paths are relative to the working directory.
	wd, _ := os.Getwd()
	c, err = Parse("", []byte("version = 1\n[agent.w]\ncomponent = \"w.wasm\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Agent["w"].Component; got != filepath.Join(wd, "w.wasm") {
		t.Errorf("component = %q", got)
	}
}

func TestByteSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ByteSize
		err  bool
	}{
		{"0", 0, false}, {"4096", 4096, false}, {"256MiB", 256 << 20, false}, {"256 mib", 256 << 20, false},
		{"1GB", 1e9, false}, {"1KB", 1000, false}, {"2KiB", 2048, false}, {"7B", 7, false}, {"1TiB", 1 << 40, false},
		{"", 0, true}, {"lots", 0, true}, {"-1", 0, true}, {"1.5GiB", 0, true}, {"MiB", 0, true},
		{"18446744073709551615", 1<<64 - 1, false}, {"18446744073709551616", 0, true}, {"17179869184GiB", 0, true},
	} {
		got, err := ParseByteSize(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d, err %v", tc.in, got, err, tc.want, tc.err)
		}
	}
	for _, tc := range []struct {
		in   ByteSize
		want string
	}{{0, "0"}, {1000, "1000"}, {1024, "1KiB"}, {256 << 20, "256MiB"}, {3 << 30, "3GiB"}, {1 << 40, "1TiB"}} {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("ByteSize(%d).String() = %q, want %q", uint64(tc.in), got, tc.want)
		}
		var back ByteSize
		if err := back.UnmarshalText([]byte(tc.in.String())); err != nil || back != tc.in {
			t.Errorf("round trip of %d: %d, %v", uint64(tc.in), back, err)
		}
	}
}

func TestDuration(t *testing.T) {
	var d Duration
	if err := d.UnmarshalText([]byte("1m30s")); err != nil || d.Duration != 90*time.Second {
		t.Errorf("UnmarshalText(1m30s) = %v, %v", d, err)
	}
	for _, bad := range []string{"", "10", "-1s", "1 fortnight"} {
		if err := d.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("UnmarshalText(%q) succeeded", bad)
		}
	}
	if b, _ := (Duration{250 * time.Millisecond}).MarshalText(); string(b) != "250ms" {
		t.Errorf("MarshalText = %q", b)
	}
}
