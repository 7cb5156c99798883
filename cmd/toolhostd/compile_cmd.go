package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhostd/toolhostd/internal/system"
)

func newCompileCmd(g *globalOptions) *cobra.Command {
	var fuel bool
	cmd := &cobra.Command{
		Use:   "compile AGENT.wasm ...",
		Short: "Compile agents into the compile cache ahead of their first start",
		Long: `Compile compiles each agent component into the compile cache that serve
and run use (host.cache_dir; default $XDG_CACHE_HOME/toolhostd), so that
their first start loads it in milliseconds instead of compiling it. Each
component is checked against the toolhost:agent contract as a start would.

An entry is keyed by the component's bytes, the wasmtime version and the
engine settings that change the code: by default the engine serve makes
for the config (it meters fuel when some agent sets limits.fuel); run's
engine never meters fuel (--fuel=false). A compile cache copied to a
machine whose CPU lacks features of this one is refused there and the
agents compile again.

Prints one line per agent on stdout. Exit status: 0 when every agent is in
the cache; 2 when one does not load or its entry cannot be written (the
others are still compiled); 64 for a usage or config error.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return compileAgents(cmd, g, fuel, args)
		},
	}
	cmd.Flags().BoolVar(&fuel, "fuel", false, "compile for an engine that meters fuel (default: as serve would for the config)")
	return cmd
}

// compileAgents is `toolhostd compile`; fuel applies when --fuel is given.
func compileAgents(cmd *cobra.Command, g *globalOptions, fuel bool, paths []string) error {
	cfg, err := optionalConfig(g)
	if err != nil {
		return err
	}
	log, err := newLogger(cfg.Host, cmd.ErrOrStderr())
	if err != nil {
		return withExit(exitUsage, err)
	}
	defer log.Sync() //nolint:errcheck // stderr
	opts := system.Options{Log: log, EngineOnly: true}
	if cmd.Flags().Changed("fuel") {
		opts.Fuel = &fuel
	}
	sys, err := system.New(cfg, opts)
	if err != nil {
		return withExit(exitHost, err)
	}
	defer sys.Close()
	eng := sys.Engine
	var failed []error
	for _, p := range paths {
		start := time.Now()
		cached, err := eng.Precompile(p)
		switch {
		case err != nil:
			failed = append(failed, err)
		case cached:
			fmt.Fprintf(cmd.OutOrStdout(), "%s: already in the cache\n", p)
		default:
			fmt.Fprintf(cmd.OutOrStdout(), "%s: compiled in %v\n", p, time.Since(start).Round(time.Millisecond))
		}
	}
	if len(failed) > 0 {
		return withExit(exitHost, errors.Join(failed...))
	}
	fmt.Fprintf(cmd.OutOrStdout(), "compile cache: %s\n", eng.Cache().Dir())
	return nil
}
