package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/policy"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/system"
)

type runOptions struct {
	input     string
	inputFile string
	grants    []string
	providers []string
	timeout   time.Duration
	env       []string
	grace     time.Duration
	chat      bool   // --chat: standard input's lines are messages to the agent
	session   string // --session: the conversation of --chat's messages
}

func newRunCmd(g *globalOptions) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run AGENT.wasm",
		Short: "Run one agent against the configured toolings and print its output",
		Long: `Run loads an agent component, connects the configured toolings, calls the
agent's run(input) and prints its ok string on stdout.

Exit status: 0 when run returns ok; 1 when it returns err (the message goes
to stderr); 2 for a trap, a load or a host failure; 64 for a usage or config
error. Without a config the agent runs with no toolings; without --grant it
is granted every configured tooling. Likewise without --provider it may get
every configured [provider.*]; with it, only those named (the others are
denied), and PROVIDER=MODEL,... allows only the models matching a glob, as
an [agent.A.grants.PROVIDER] models list does. When the config has an
[agent.X] whose component is this file, the agent runs as X, as serve runs
it: under X's toolings and providers lists and its [agent.X.grants.*]
tables (tool and resource patterns, call limits and rates, models, request
limits and token budgets); --grant and --provider, when given, replace
those lists and their grants. X's other keys (input, env, limits.memory,
limits.fuel, limits.run_timeout, inbox_capacity, restart) do not apply:
the flags say those, and run's engine meters no fuel. The agent's key-value store
(wasi:keyvalue) is the state directory's, as serve keeps it, when the
config sets [host] state_dir (and no etcd backend); otherwise a temporary
store removed at exit. SIGINT or SIGTERM give the agent its shutdown
envelope and the grace period, then stop it. A durable configured agent
([agent.X] durable = true, with [host] state_dir) records its run in the
state directory's oplog.db: a run killed mid-way is resumed, not started
over, by running the same command again (docs/durable.md).

With --chat the agent is talked to while it runs: each line of standard
input is a message to it (sender "api", in --session when given; empty
lines are skipped), and each reply streams to standard output as it comes,
ending with a newline. A reply that ends in an error is written to stderr
as "error: CODE: MESSAGE" and the chat goes on. End of input (or SIGINT or
SIGTERM) gives the agent its shutdown and the grace period; the exit status
is then run's. An agent whose component cannot receive messages (built
against toolhost:agent 0.1.0 or 0.2.0) is refused at once (exit 2).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAgent(cmd, g, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.input, "input", "", "the agent's input string")
	f.StringVar(&o.inputFile, "input-file", "", "read the agent's input from a file (- for stdin)")
	f.StringArrayVar(&o.grants, "grant", nil, "grant only this tooling, TOOLING or TOOLING=PATTERN,... to allow only the tools matching a glob (repeatable; default: all configured)")
	f.StringArrayVar(&o.providers, "provider", nil, "grant only this provider, PROVIDER or PROVIDER=MODEL,... to allow only the models matching a glob (repeatable; default: all configured)")
	f.DurationVar(&o.timeout, "timeout", 0, "stop the agent after this long (0: no limit)")
	f.StringArrayVar(&o.env, "env", nil, "set KEY=VALUE in the agent's environment (repeatable)")
	f.DurationVar(&o.grace, "grace", config.DefaultStopGrace, "how long a stopped agent has to return from run")
	f.BoolVar(&o.chat, "chat", false, "send each line of standard input to the agent as a message and print its replies")
	f.StringVar(&o.session, "session", "", "with --chat: the session of the messages")
	return cmd
}

// runAgent is `toolhostd run`.
func runAgent(cmd *cobra.Command, g *globalOptions, o *runOptions, path string) error {
	cfg, err := optionalConfig(g)
	if err != nil {
		return err
	}
	input, env, grants, err := o.resolve(cmd, cfg)
	if err != nil {
		return withExit(exitUsage, err)
	}
	name := agentName(path)
	ac := configuredAgent(cfg, path)
	if ac != nil {
		name = ac.Name
	}
	pol, err := grantPolicy(name, "--grant", o.grants)
	if err != nil {
		return withExit(exitUsage, err)
	}
	if ac != nil && grants == nil {
		// As serve runs it: its toolings list, its grants' tools,
		// resources, limits and rates.
		grants, pol = toolingSet(ac.Toolings), policy.FromConfig(ac, nil)
	}
	log, err := newLogger(cfg.Host, cmd.ErrOrStderr())
	if err != nil {
		return withExit(exitUsage, err)
	}
	defer log.Sync() //nolint:errcheck // stderr

	// Signals are caught from here on: one that arrives while the agent
	// loads stops it before its run begins (it exits 2, interrupted).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	// Only the granted toolings start; the others stay idle (the agent is
	// denied them by name). The engine meters no fuel: run sets no limit.
	noFuel := false
	sys, err := system.New(cfg, system.Options{Log: log, Fuel: &noFuel, TemporaryStore: runStoreTemporary(cfg), Toolings: grants})
	var hostErr *system.HostError
	var storeErr *system.StoreError
	switch {
	case errors.As(err, &hostErr), errors.As(err, &storeErr):
		return withExit(exitHost, err)
	case err != nil:
		return withExit(exitUsage, err)
	}
	defer sys.Close()
	stop := sys.Start()
	defer stop()
	prog, err := sys.Host.LoadFile(path)
	if err != nil {
		return withExit(exitHost, err)
	}
	defer prog.Close()

	// As serve builds an instance's config, with ac's lists and grants
	// (when --grant and --provider do not replace them) and the flags'
	// limits.
	spec := system.Agent{Name: name, Config: ac, Env: env, Policy: pol, Grants: grants,
		RunLimits: &system.RunLimits{Timeout: o.timeout, StopGrace: o.grace}}
	if ac == nil || len(o.providers) > 0 {
		access := providerAccess(name, o.providers)
		spec.Providers = &access
	}
	acfg := sys.AgentConfig(spec)
	ol, err := openRunOplog(cfg, ac, sys, prog, runInput(o.chat, o.session, input), &acfg, log)
	if err != nil {
		return withExit(exitHost, err)
	}
	if o.chat {
		return chatAgent(cmd, chatRun{log: log, sys: sys, prog: prog, cfg: acfg, agent: ac, oplog: ol,
			path: path, input: input, session: o.session, sigs: sigs})
	}
	agent := sys.Host.Start(prog, acfg, input)
	select {
	case s := <-sigs:
		log.Info("stopping the agent", zap.String("signal", s.String()), zap.Duration("grace", o.grace))
		agent.Stop()
	case <-agent.Done():
	}
	out, err := agent.Wait()
	endRunOplog(ol, err, log)
	if err == nil {
		fmt.Fprintln(cmd.OutOrStdout(), out)
	}
	return runExit(err)
}

// runStoreTemporary reports whether run keeps the agent's key-value store
// in a temporary file removed at exit: when the config names no state
// directory ([host] state_dir), or keeps the store in the cluster's etcd
// (run joins no cluster). Otherwise it is the state directory's kv.db, as
// serve keeps it (one process at a time: a serve using it makes run fail
// with the file named).
func runStoreTemporary(cfg *config.Config) bool {
	return cfg.Host.StateDir == "" || cfg.Host.Store.Backend == config.StoreEtcd
}

// runExit is the exit of an agent's run that ended with err: 0 for ok, 1
// for its err, 2 for a trap or a host failure.
func runExit(err error) error {
	var runErr *host.RunError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &runErr):
		return withExit(exitFailure, err)
	default:
		return withExit(exitHost, err)
	}
}

// configuredAgent is the [agent.X] of cfg whose component is the file at
// path, if there is one: run then applies its grants as serve does.
func configuredAgent(cfg *config.Config, path string) *config.Agent {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Agent)) {
		a := cfg.Agent[name]
		if ai, err := os.Stat(a.Component); err == nil && os.SameFile(fi, ai) {
			return a
		}
	}
	return nil
}

// toolingSet reports membership in names.
func toolingSet(names []string) func(string) bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return func(n string) bool { return set[n] }
}

// optionalConfig loads the config if one is named or found; with none, an
// empty config (no toolings, defaults) is used.
func optionalConfig(g *globalOptions) (*config.Config, error) {
	cfg, err := loadConfig(g)
	if err == nil {
		return cfg, nil
	}
	if g.configPath == "" && os.Getenv("TOOLHOSTD_CONFIG") == "" && errors.Is(err, config.ErrNoConfig) {
		return config.Parse("", []byte("version = 1\n"))
	}
	return nil, err
}

// resolve checks the flags against the config.
func (o *runOptions) resolve(cmd *cobra.Command, cfg *config.Config) (string, map[string]string, func(string) bool, error) {
	input := o.input
	if cmd.Flags().Changed("input") && cmd.Flags().Changed("input-file") {
		return "", nil, nil, errors.New("--input and --input-file exclude each other")
	}
	if o.chat && o.inputFile == "-" {
		return "", nil, nil, errors.New("--chat reads its messages from standard input: --input-file - excludes it")
	}
	if o.session != "" && !o.chat {
		return "", nil, nil, errors.New("--session is for --chat")
	}
	if o.inputFile != "" {
		var b []byte
		var err error
		if o.inputFile == "-" {
			b, err = io.ReadAll(cmd.InOrStdin())
		} else {
			b, err = os.ReadFile(o.inputFile)
		}
		if err != nil {
			return "", nil, nil, fmt.Errorf("--input-file: %w", err)
		}
		input = string(b)
	}
	env := map[string]string{}
	for _, kv := range o.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return "", nil, nil, fmt.Errorf("--env %q: want KEY=VALUE", kv)
		}
		env[k] = v
	}
	var grants func(string) bool
	if len(o.grants) > 0 {
		set := map[string]bool{}
		for _, n := range grantNames(o.grants) {
			if _, ok := cfg.Tooling[n]; !ok {
				return "", nil, nil, fmt.Errorf("--grant %q: no [tooling.%s] in the config", n, n)
			}
			set[n] = true
		}
		grants = func(n string) bool { return set[n] }
	}
	for _, v := range o.providers {
		n, _, err := splitGrant(v)
		if err != nil {
			return "", nil, nil, fmt.Errorf("--provider %w", err)
		}
		if _, ok := cfg.Provider[n]; !ok {
			return "", nil, nil, fmt.Errorf("--provider %q: no [provider.%s] in the config%s", v, n, definedNames("providers", cfg.Provider))
		}
	}
	return input, env, grants, nil
}

// providerAccess is what --provider values grant agent: the providers
// named, or all when none is. PROVIDER=MODEL,... narrows the models of
// PROVIDER to those globs (several such values add up; a bare PROVIDER
// allows every model). The values were checked by resolve.
func providerAccess(agent string, values []string) contract.ProviderAccess {
	if len(values) == 0 {
		return contract.ProviderAccess{}
	}
	every := map[string]bool{}
	models := map[string][]string{}
	for _, v := range values {
		n, globs, _ := splitGrant(v)
		if globs == nil {
			every[n] = true
		} else {
			models[n] = append(models[n], globs...)
		}
	}
	return contract.ProviderAccess{
		Granted: func(n string) bool { return every[n] || models[n] != nil },
		Wrap: func(n string, p provider.Provider) (provider.Provider, error) {
			if every[n] {
				return p, nil
			}
			globs := models[n]
			return provider.NewLimited(p, agent, &config.ProviderGrant{Models: globs},
				provider.LimitOptions{ModelsFrom: "--provider " + n + "=" + strings.Join(globs, ",")})
		},
	}
}

// agentName is the file name without its extension.
func agentName(path string) string {
	base := path[strings.LastIndexByte(path, '/')+1:]
	if i := strings.IndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	return base
}
