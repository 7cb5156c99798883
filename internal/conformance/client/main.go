// Command client is toolhostd's adapter for the client scenarios of the MCP
// conformance suite (@modelcontextprotocol/conformance). The suite runs it
// as `client URL` with MCP_CONFORMANCE_SCENARIO (and, for some scenarios,
// MCP_CONFORMANCE_CONTEXT, a JSON object) in its environment. It writes a
// toolhostd config with one [tooling.conformance] table for URL, parses it
// with internal/config, and drives the tooling through internal/tooling,
// the way `toolhostd tools` and `toolhostd call` do. It exits 0 when the
// scenario's operations succeeded; the suite judges the rest.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// toolingName is the name of the one tooling the adapter configures.
const toolingName = "conformance"

// scenarioTimeout bounds one scenario (the suite's own default is 30s).
const scenarioTimeout = 25 * time.Second

// env is what the suite hands the adapter.
type env struct {
	URL      string
	Scenario string
	// Context is MCP_CONFORMANCE_CONTEXT decoded (nil when unset).
	Context map[string]any
	// StateDir is a fresh directory the adapter may use (for example for
	// stored tokens); it is removed when the scenario ends.
	StateDir string
}

// scenario is how the adapter plays one client scenario.
type scenario struct {
	// config returns extra TOML: keys added to the [host] table and to the
	// [tooling.conformance] table (each "" for none). The url, transport
	// and timeouts are always set.
	config func(e *env) (host, tooling string, err error)
	// run drives the tooling once its Serve is running.
	run func(ctx context.Context, t *mcpclient.Client, e *env) error
	// options, if set, are tooling options for the scenario (auth.go: the
	// OAuth login flow).
	options func(e *env) mcpclient.Options
}

// scenarios holds every scenario the adapter knows, by name; files of this
// package add theirs from init (auth.go: the auth/* scenarios).
var scenarios = map[string]scenario{}

func register(name string, s scenario) {
	if _, dup := scenarios[name]; dup {
		panic("conformance client: scenario registered twice: " + name)
	}
	if s.config == nil {
		s.config = func(*env) (string, string, error) { return "", "", nil }
	}
	scenarios[name] = s
}

func main() {
	os.Exit(run())
}

func run() int {
	if len(os.Args) != 2 {
		fmt.Fprintf(os.Stderr, "usage: %s URL (with MCP_CONFORMANCE_SCENARIO set)\n", os.Args[0])
		return 2
	}
	e := &env{URL: os.Args[1], Scenario: os.Getenv("MCP_CONFORMANCE_SCENARIO")}
	s, ok := scenarios[e.Scenario]
	if !ok {
		names := make([]string, 0, len(scenarios))
		for n := range scenarios {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "unknown scenario %q (MCP_CONFORMANCE_SCENARIO); known: %s\n", e.Scenario, strings.Join(names, ", "))
		return 2
	}
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &e.Context); err != nil {
			fmt.Fprintf(os.Stderr, "MCP_CONFORMANCE_CONTEXT: %v\n", err)
			return 2
		}
	}
	dir, err := os.MkdirTemp("", "toolhostd-conformance-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	e.StateDir = dir

	log := zap.New(zapcore.NewCore(
		zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()),
		zapcore.Lock(os.Stderr), zapcore.DebugLevel))
	defer func() { _ = log.Sync() }()

	if err := play(log, s, e); err != nil {
		log.Error("scenario failed", zap.String("scenario", e.Scenario), zap.Error(err))
		return 1
	}
	log.Info("scenario done", zap.String("scenario", e.Scenario))
	return 0
}

// toolingConfig writes the scenario's config as a toolhostd.toml and
// parses it the way every toolhostd command does.
func toolingConfig(s scenario, e *env) (*config.Tooling, error) {
	host, extra, err := s.config(e)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("version = 1\n\n[host]\n")
	b.WriteString(host)
	fmt.Fprintf(&b, "\n[tooling.%s]\nurl = %q\ntransport = \"http\"\n", toolingName, e.URL)
	b.WriteString("connect_timeout = \"5s\"\ncall_timeout = \"20s\"\n")
	b.WriteString(extra)
	c, err := config.Parse("conformance.toml", []byte(b.String()))
	if err != nil {
		return nil, fmt.Errorf("config:\n%s\n%w", b.String(), err)
	}
	tc := c.Tooling[toolingName]
	tc.Name = toolingName
	return tc, nil
}

// play runs one scenario: build the tooling, serve it, drive it, stop it.
func play(log *zap.Logger, s scenario, e *env) error {
	tc, err := toolingConfig(s, e)
	if err != nil {
		return err
	}
	var opts mcpclient.Options
	if s.options != nil {
		opts = s.options(e)
	}
	t, err := mcpclient.New(tc, log, opts)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, scenarioTimeout)
	defer cancel()
	serveCtx, endServe := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- t.Serve(serveCtx, nil) }()
	err = s.run(ctx, t, e)
	endServe()
	if serr := <-done; serr != nil && !errors.Is(serr, context.Canceled) && err == nil {
		err = fmt.Errorf("serve: %w", serr)
	}
	return err
}

// ---- the scenarios that need no authorization ----

func init() {
	register("initialize", scenario{run: func(ctx context.Context, t *mcpclient.Client, _ *env) error {
		_, err := t.ListTools(ctx)
		return err
	}})
	register("tools_call", scenario{run: func(ctx context.Context, t *mcpclient.Client, _ *env) error {
		return listThenCall(ctx, t, "add_numbers", `{"a":5,"b":3}`)
	}})
	register("elicitation-sep1034-client-defaults", scenario{
		config: func(*env) (string, string, error) {
			return "", "elicitation = \"accept-defaults\"\n", nil
		},
		run: func(ctx context.Context, t *mcpclient.Client, _ *env) error {
			return listThenCall(ctx, t, "test_client_elicitation_defaults", `{}`)
		},
	})
	register("sse-retry", scenario{run: func(ctx context.Context, t *mcpclient.Client, _ *env) error {
		return listThenCall(ctx, t, "test_reconnection", `{}`)
	}})
}

// listThenCall lists the tools, checks that tool is among them and calls it
// with args; a result with isError true is an error here.
func listThenCall(ctx context.Context, t *mcpclient.Client, tool, args string) error {
	tools, err := t.ListTools(ctx)
	if err != nil {
		return err
	}
	found := false
	for _, tl := range tools {
		found = found || tl.Name == tool
	}
	if !found {
		return fmt.Errorf("the server lists no tool %q", tool)
	}
	res, err := t.CallTool(ctx, tool, json.RawMessage(args))
	if err != nil {
		return err
	}
	var v struct {
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal([]byte(res.Value), &v); err != nil {
		return fmt.Errorf("tools/call %q: decoding the result: %w", tool, err)
	}
	if v.IsError {
		return fmt.Errorf("tools/call %q: the tool answered isError: %s", tool, res.Value)
	}
	return nil
}
