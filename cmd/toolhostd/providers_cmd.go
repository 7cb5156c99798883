package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/system"
)

// providerCheck is what `toolhostd providers` found of one provider.
type providerCheck struct {
	Name   string   `json:"name"`
	Kind   string   `json:"kind"`
	Model  string   `json:"model"`
	OK     bool     `json:"ok"`
	Models []string `json:"models,omitempty"` // what the endpoint lists
	Listed bool     `json:"model_listed"`     // the default model is among them
	Error  string   `json:"error,omitempty"`
	Took   string   `json:"took"`
}

func newProvidersCmd(opts *globalOptions) *cobra.Command {
	var asJSON bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "providers [NAME...]",
		Short: "List the configured providers and check that each answers",
		Long: "providers lists the [provider.*] of the config (or those named) and asks each endpoint for its\n" +
			"models (GET /models: no tokens are spent), which needs the endpoint up and the api_key accepted.\n" +
			"A provider answers \"ok\", with the number of models listed and whether its default model is\n" +
			"among them, or its error code and message. Exits 1 when one does not answer.",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := loadConfig(opts)
			if err != nil {
				return err
			}
			names := args
			if len(names) == 0 {
				for n := range c.Provider {
					names = append(names, n)
				}
				slices.Sort(names)
			}
			for _, n := range names {
				if c.Provider[n] == nil {
					return withExit(exitUsage, fmt.Errorf("no provider named %q%s", n, definedNames("providers", c.Provider)))
				}
			}
			log, err := newLogger(c.Host, cmd.ErrOrStderr())
			if err != nil {
				return withExit(exitUsage, err)
			}
			defer func() { _ = log.Sync() }()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()

			checks := make([]providerCheck, len(names))
			var wg sync.WaitGroup
			for i, n := range names {
				wg.Add(1)
				go func() {
					defer wg.Done()
					checks[i] = checkProvider(ctx, c, n, log, timeout)
				}()
			}
			wg.Wait()

			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(out, checks); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tKIND\tMODEL\tSTATUS")
				for _, ch := range checks {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", ch.Name, ch.Kind, ch.Model, ch.status())
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			failed := 0
			for _, ch := range checks {
				if !ch.OK {
					failed++
				}
			}
			if failed > 0 {
				return withExit(exitFailure, fmt.Errorf("%s of %d did not answer", count(failed, "provider"), len(checks)))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as JSON")
	cmd.Flags().DurationVar(&timeout, "timeout", 15*time.Second, "how long each provider has to answer")
	return cmd
}

func (ch providerCheck) status() string {
	if !ch.OK {
		return ch.Error
	}
	listed := "its model listed"
	if !ch.Listed {
		listed = "its model not listed"
	}
	return fmt.Sprintf("ok (%s, %s; %s)", count(len(ch.Models), "model"), listed, ch.Took)
}

// checkProvider opens one provider of c (through package system, as
// serve opens them; no tooling starts) and lists its models.
func checkProvider(ctx context.Context, c *config.Config, name string, log *zap.Logger, timeout time.Duration) providerCheck {
	cfg := c.Provider[name]
	ch := providerCheck{Name: name, Kind: cfg.Kind, Model: cfg.Model}
	sys, err := system.New(c, system.Options{Log: log, NoHost: true, Providers: []string{name},
		Toolings: func(string) bool { return false }})
	if err != nil {
		ch.Error = err.Error()
		return ch
	}
	defer func() { _ = sys.Close() }()
	p, _ := sys.Providers.Get(name)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	models, err := p.(provider.ModelLister).ListModels(ctx)
	ch.Took = time.Since(start).Round(time.Millisecond).String()
	if err != nil {
		ch.Error = err.Error()
		return ch
	}
	ch.OK, ch.Models, ch.Listed = true, models, slices.Contains(models, cfg.Model)
	return ch
}
