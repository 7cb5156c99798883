package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/engine"
	"github.com/toolhostd/toolhostd/internal/gateway"
	"github.com/toolhostd/toolhostd/internal/kv"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// The package's tests share one Host (one engine, one compile cache under
// build/test-cache, so that the 12 MB JS components compile once per
// checkout, not once per run), one gateway hub serving every tooling below, and
// the Programs loaded from build/. TestMain closes them all before goleak
// looks for leftover goroutines.
//
// Toolings of the shared hub:
//   - mem: an in-process go-sdk server (newTestServer, a testenv.MCPServer) with resources.subscribe
//   - mem-short: a second session on the same server, call timeout 300ms
//   - nosub: an in-process go-sdk server without resources.subscribe
//   - everything: @modelcontextprotocol/server-everything over stdio
//   - filesystem: @modelcontextprotocol/server-filesystem on a temp dir

// The key-value tests run embedded etcd members, whose goroutines outlive
// them by a moment (etcdtest.LeakOptions; nothing else here serves HTTP).
func TestMain(m *testing.M) { goleak.VerifyTestMain(withTeardown{m}, etcdtest.LeakOptions()...) }

// withTeardown runs the tests, then releases the shared suite, so that
// goleak's check sees a quiet process.
type withTeardown struct{ m *testing.M }

func (w withTeardown) Run() int {
	code := w.m.Run()
	shared.close()
	return code
}

// suite is the shared state; setUp makes it on first use.
type suite struct {
	once sync.Once
	err  error

	root     string
	mem      *testenv.MCPServer
	nosub    *testenv.MCPServer
	scripted *testenv.Scripted // the providers "fake" and "other"
	fsDir    string
	hub      *gateway.Hub
	host     *Host
	logs     *observer.ObservedLogs
	log      *zap.Logger
	stopHub  context.CancelFunc
	hubDone  chan struct{}
	mcps     map[string]*mcpclient.Client
	tempDirs []string
	// fixtureDir holds the decompressed 0.1.0 probes (guests_test.go).
	fixtureDir string

	// everythingToggled: server-everything's resource updates are on.
	everythingToggled atomic.Bool

	progMu sync.Mutex
	progs  map[string]*Program
}

var shared suite

// env returns the shared suite, setting it up on first use, and resets the
// in-process server's records.
func env(t testing.TB) *suite {
	t.Helper()
	shared.once.Do(func() { shared.err = shared.setUp() })
	if shared.err != nil {
		t.Fatalf("test suite setup: %v", shared.err)
	}
	shared.mem.Reset()
	return &shared
}

func cfgDur(d time.Duration) config.Duration { return config.Duration{Duration: d} }

func toolingConfig(name string) *config.Tooling {
	return &config.Tooling{
		Name:           name,
		Kind:           "mcp",
		Transport:      "stdio",
		Restart:        config.Restart{InitialBackoff: cfgDur(10 * time.Millisecond), MaxBackoff: cfgDur(200 * time.Millisecond), HealthyAfter: cfgDur(time.Second)},
		ToolingProcess: config.ToolingProcess{Command: "unused-with-a-dialer"},
		ToolingCalls:   config.ToolingCalls{ConnectTimeout: cfgDur(30 * time.Second), CallTimeout: cfgDur(30 * time.Second), MaxConcurrentCalls: 64},
	}
}

func inMemory(s *testenv.MCPServer) mcpclient.Options {
	return mcpclient.Options{Dialer: s.Dialer()}
}

func (s *suite) setUp() error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	s.root = root
	s.progs = map[string]*Program{}
	obs, logs := observer.New(zapcore.DebugLevel)
	stderr := zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.Lock(os.Stderr), zapcore.ErrorLevel)
	s.logs = logs
	s.log = zap.New(zapcore.NewTee(obs, stderr))

	s.mem = newTestServer(true)
	s.nosub = newTestServer(false)
	if s.fsDir, err = os.MkdirTemp("", "toolhostd-host-fs-"); err != nil {
		return err
	}
	s.tempDirs = append(s.tempDirs, s.fsDir)
	if err := os.WriteFile(filepath.Join(s.fsDir, "note.txt"), []byte("a note for the agents\n"), 0o600); err != nil {
		return err
	}
	everything, err := testenv.NPMServerPath(root, "server-everything")
	if err != nil {
		return err
	}
	filesystem, err := testenv.NPMServerPath(root, "server-filesystem")
	if err != nil {
		return err
	}

	short := toolingConfig("mem-short")
	short.CallTimeout = cfgDur(300 * time.Millisecond)
	ev := toolingConfig("everything")
	ev.Command, ev.Args = "node", []string{everything, "stdio"}
	fs := toolingConfig("filesystem")
	fs.Command, fs.Args = "node", []string{filesystem, s.fsDir}

	type def struct {
		cfg  *config.Tooling
		opts mcpclient.Options
	}
	defs := []def{
		{toolingConfig("mem"), inMemory(s.mem)},
		{short, inMemory(s.mem)},
		{toolingConfig("nosub"), inMemory(s.nosub)},
		{ev, mcpclient.Options{}},
		{fs, mcpclient.Options{}},
	}
	s.mcps = map[string]*mcpclient.Client{}
	var entries []gateway.Entry
	for _, d := range defs {
		m, err := mcpclient.New(d.cfg, s.log, d.opts)
		if err != nil {
			return err
		}
		s.mcps[d.cfg.Name] = m
		entries = append(entries, gateway.Entry{Tooling: m, Limits: gateway.LimitsFrom(d.cfg)})
	}
	s.hub = gateway.NewHub(entries, s.log)
	s.scripted = testenv.NewScripted("fake")
	other := testenv.NewScripted("other")
	providers := contract.Options{Providers: func(name string) (provider.Provider, bool) {
		switch name {
		case "fake":
			return s.scripted, true
		case "other":
			return other, true
		}
		return nil, false
	}}
	ctx, cancel := context.WithCancel(context.Background())
	s.stopHub, s.hubDone = cancel, make(chan struct{})
	go func() { defer close(s.hubDone); _ = s.hub.Serve(ctx) }()

	cacheDir := filepath.Join(root, "build", "test-cache")
	if s.host, err = New(Options{Engine: engine.Options{CacheDir: cacheDir}, Log: s.log, Agent: providers}, s.hub); err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for name, m := range s.mcps {
		for !m.Status().Connected {
			if time.Now().After(deadline) {
				return fmt.Errorf("tooling %s did not connect within 60s", name)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// close releases the suite (programs, host, hub) if it was set up.
func (s *suite) close() {
	if s.host == nil {
		return
	}
	for _, p := range s.progs {
		p.Close()
	}
	s.host.Close()
	s.stopHub()
	select {
	case <-s.hubDone:
	case <-time.After(30 * time.Second):
		fmt.Fprintln(os.Stderr, "the hub did not stop within 30s")
	}
	for _, d := range s.tempDirs {
		os.RemoveAll(d)
	}
}

// program loads build/<dir>/<name>.wasm once for the whole package.
func (s *suite) program(t testing.TB, dir, name string) *Program {
	t.Helper()
	s.progMu.Lock()
	defer s.progMu.Unlock()
	key := dir + "/" + name
	if p, ok := s.progs[key]; ok {
		return p
	}
	var path string
	if strings.HasPrefix(dir, fixturePrefix) {
		path = s.fixturePath(t, dir, name)
	} else {
		var err error
		if path, err = testenv.AgentPath(s.root, dir, name); err != nil {
			t.Fatal(err)
		}
	}
	p, err := s.host.LoadFile(path)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	s.progs[key] = p
	return p
}

// ---- the in-process MCP server ----

// step is one step of a probe run (the guest side is testdata/agents/probe.js
// and its Go port testdata/agents-go/probe).
type step map[string]any

// stepResult is what the probe reports for one step.
type stepResult struct {
	Op      string          `json:"op"`
	OK      json.RawMessage `json:"ok"`
	Err     *hostErr        `json:"err"`
	Thrown  string          `json:"thrown"`
	Skipped bool            `json:"skipped"`
}

type hostErr struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// envelope is an inbox envelope as the probe reports it.
type envelope struct {
	ID  string          `json:"id"`
	Tag string          `json:"tag"`
	Val json.RawMessage `json:"val"`
}

type probeOpts struct {
	guest     guest // which build of the probe (default componentize-js)
	name      string
	grants    []string // nil: all
	providers []string // nil: all
	capacity  int
	grace     time.Duration
	messaging contract.Messaging // how it sends messages (0.3.0)
	// bucket is its key-value store's open (AgentConfig.OpenBucket); nil:
	// it has no store.
	bucket func(identifier string) (*kv.Bucket, error)
}

func (o probeOpts) config() AgentConfig {
	cfg := AgentConfig{Name: o.name, Messaging: o.messaging, OpenBucket: o.bucket, Limits: AgentLimits{InboxCapacity: o.capacity, StopGrace: o.grace}}
	if cfg.Name == "" {
		cfg.Name = "probe"
	}
	if cfg.Limits.StopGrace == 0 {
		cfg.Limits.StopGrace = 10 * time.Second
	}
	if o.grants != nil {
		set := map[string]bool{}
		for _, g := range o.grants {
			set[g] = true
		}
		cfg.Grants = func(n string) bool { return set[n] }
	}
	if o.providers != nil {
		cfg.Providers.Granted = func(n string) bool { return slices.Contains(o.providers, n) }
	}
	return cfg
}

func probeInput(t testing.TB, steps []step) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"steps": steps})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// startProbe starts the probe agent on steps; the test ends it.
func (s *suite) startProbe(t testing.TB, o probeOpts, steps ...step) *Agent {
	t.Helper()
	a := s.host.Start(s.program(t, o.guest.dir(), "probe"), o.config(), probeInput(t, steps))
	t.Cleanup(func() {
		a.Stop()
		<-a.Done()
	})
	return a
}

// finish waits for the agent and parses the probe's output.
func finish(t testing.TB, a *Agent) []stepResult {
	t.Helper()
	select {
	case <-a.Done():
	case <-time.After(60 * time.Second):
		a.Stop()
		t.Fatal("the probe did not finish within 60s")
	}
	out, err := a.Wait()
	if err != nil {
		t.Fatalf("probe failed: %v", err)
	}
	var rs []stepResult
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("probe output %q: %v", out, err)
	}
	return rs
}

// probe runs steps to the end and returns the guest's view of each.
func (s *suite) probe(t testing.TB, o probeOpts, steps ...step) []stepResult {
	t.Helper()
	return finish(t, s.startProbe(t, o, steps...))
}

// summary renders a step result compactly for table comparisons:
// `err <code>`, `null`, a JSON literal, or for envelopes `<id> <tag>
// <detail>`.
func summary(r stepResult) string {
	switch {
	case r.Skipped:
		return "skipped"
	case r.Err != nil:
		return "err " + r.Err.Code
	case r.Thrown != "":
		return "thrown " + r.Thrown
	}
	var env envelope
	if json.Unmarshal(r.OK, &env) == nil && env.Tag != "" {
		return envSummary(env)
	}
	return string(r.OK)
}

func envSummary(e envelope) string {
	s := e.ID + " " + e.Tag
	switch e.Tag {
	case "tool-result":
		var tr struct{ Name, Arguments, Value string }
		json.Unmarshal(e.Val, &tr)
		text, isErr := valueText(tr.Value)
		s += " " + tr.Name + " " + text
		if isErr {
			s += " (isError)"
		}
	case "error":
		var he hostErr
		json.Unmarshal(e.Val, &he)
		s += " " + he.Code
	case "resource-updated":
		var rc struct{ URI, Content string }
		json.Unmarshal(e.Val, &rc)
		s += " " + rc.URI + "=" + rc.Content
	case "chat-done":
		var r struct {
			Message      struct{ Content string }
			FinishReason string
		}
		json.Unmarshal(e.Val, &r)
		s += " " + r.FinishReason + " " + r.Message.Content
	case "resource-list-updated":
		var l []struct{ URI string }
		json.Unmarshal(e.Val, &l)
		s += fmt.Sprintf(" %d", len(l))
	}
	return s
}

// valueText is the text of the first content of a CallToolResult JSON.
func valueText(value string) (string, bool) {
	var v struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if json.Unmarshal([]byte(value), &v) != nil || len(v.Content) == 0 {
		return "<" + value + ">", v.IsError
	}
	return v.Content[0].Text, v.IsError
}

// checkSteps compares the summaries of rs with want ("*" matches anything,
// a trailing "*" a prefix).
func checkSteps(t testing.TB, rs []stepResult, want ...string) {
	t.Helper()
	var got []string
	for _, r := range rs {
		got = append(got, summary(r))
	}
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		w := want[i]
		switch {
		case w == "*":
		case strings.HasSuffix(w, "*"):
			ok = strings.HasPrefix(got[i], strings.TrimSuffix(w, "*"))
		default:
			ok = got[i] == w
		}
	}
	if !ok {
		t.Fatalf("guest saw:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// okAs decodes a step's ok value.
func okAs[T any](t testing.TB, r stepResult) T {
	t.Helper()
	var v T
	if r.Err != nil || r.Thrown != "" {
		t.Fatalf("step %s failed: %+v %s", r.Op, r.Err, r.Thrown)
	}
	if err := json.Unmarshal(r.OK, &v); err != nil {
		t.Fatalf("step %s: %s: %v", r.Op, r.OK, err)
	}
	return v
}
