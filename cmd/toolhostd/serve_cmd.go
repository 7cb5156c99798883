package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/daemon"
	"github.com/toolhostd/toolhostd/internal/system"
)

func newServeCmd(g *globalOptions) *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the configured agents and toolings as a daemon",
		Long: `Serve runs every [agent.<name>] of the config against the configured
toolings, restarting each per its restart policy, and serves the control API
(toolhostd ps, agent, toolings, reload; /healthz, /readyz, /metrics) on
host.control_socket (default $RUNTIME_DIRECTORY/toolhostd.sock, else
/run/toolhostd/toolhostd.sock).

Signals: SIGHUP reopens the audit log (host.audit_log, for logrotate) and
reloads the config (on an error the running config stays and the log says
why); SIGINT and SIGTERM stop accepting control requests, give
every agent its shutdown envelope and stop grace, then stop the toolings and
their server processes, and exit 0. Under systemd (Type=notify) it reports
READY=1 once the control socket listens and every agent was started,
RELOADING=1 and STOPPING=1, and pings the watchdog when WatchdogSec is set.

--control-listen ADDR serves the control API on TCP as [host] control_listen
would (and instead of it), with the config's control_token as the bearer
token: a container image's config can then name the token's variable and
leave the port to the command line.

Exit status: 0 after a signal; 64 for a usage or config error; 2 when the
daemon cannot start or its control socket fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return serveDaemon(cmd, g, listen) },
	}
	cmd.Flags().StringVar(&listen, "control-listen", "",
		"serve the control API on this TCP address (host:port) too, instead of [host] control_listen; needs [host] control_token")
	return cmd
}

// serveDaemon is `toolhostd serve`; listen, if set, replaces [host]
// control_listen.
func serveDaemon(cmd *cobra.Command, g *globalOptions, listen string) error {
	cfg, err := loadConfig(g)
	if err != nil {
		return err
	}
	if listen != "" {
		if _, _, err := net.SplitHostPort(listen); err != nil {
			return withExit(exitUsage, fmt.Errorf("--control-listen %q: want host:port: %w", listen, err))
		}
		cfg.Host.ControlListen = listen
	}
	log, err := newLogger(cfg.Host, cmd.ErrOrStderr())
	if err != nil {
		return withExit(exitUsage, err)
	}
	defer log.Sync() //nolint:errcheck // stderr

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	listening := make(chan struct{})
	d, err := daemon.New(cfg.Path, cfg, daemon.Options{Log: log, Metrics: true, ReadyGate: listening,
		FenceOverrun: fenceOverrun(log), Version: toolhostdVersion()})
	var ce *system.ControlError
	switch {
	case errors.As(err, &ce):
		return withExit(exitUsage, err)
	case err != nil:
		return withExit(exitHost, err)
	}
	srv := d.ControlServer()

	// The control socket first: Serve announces READY=1 only once it
	// listens (and every agent was started).
	// Every return from here on stops the control server and waits for
	// its goroutine (the deferred calls run in reverse order).
	ctlCtx, stopCtl := context.WithCancel(context.Background())
	var ctl sync.WaitGroup
	defer ctl.Wait()
	defer stopCtl()
	ctlDone := make(chan error, 1) // never blocks the goroutine
	ctl.Go(func() { ctlDone <- srv.Serve(ctlCtx) })
	select {
	case <-srv.Listening():
		close(listening)
	case err := <-ctlDone:
		d.Close()
		if err == nil {
			err = errors.New("stopped before listening")
		}
		return withExit(exitHost, fmt.Errorf("control socket %s: %w", srv.Socket(), err))
	}

	dCtx, stopDaemon := context.WithCancel(context.Background())
	defer stopDaemon()
	dDone := make(chan error, 1)
	go func() { dDone <- d.Serve(dCtx) }()

	var reloads sync.WaitGroup
	defer reloads.Wait()
	var failure error
loop:
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGHUP {
				log.Info("reloading the config", zap.String("signal", s.String()), zap.String("config", cfg.Path))
				reloads.Go(func() {
					_ = d.ReopenAudit() // for logrotate; a failure is logged
					if err := d.Reload(); err != nil {
						log.Error("reload failed; the running config stays", zap.Error(err))
					}
				})
				continue
			}
			log.Info("shutting down", zap.String("signal", s.String()))
			break loop
		case err := <-ctlDone:
			ctlDone <- err // for the wait below
			failure = fmt.Errorf("control API: %w", err)
			log.Error("the control API failed; shutting down", zap.Error(err))
			break loop
		case err := <-dDone:
			// Stop the control API too, and wait for it, before
			// returning.
			dDone <- err // for the wait below
			failure = fmt.Errorf("daemon: %w", err)
			break loop
		}
	}
	// Stop accepting control requests, then stop the agents and toolings.
	stopCtl()
	if err := <-ctlDone; err != nil && failure == nil {
		log.Warn("control API shutdown", zap.Error(err))
	}
	stopDaemon()
	if err := <-dDone; err != nil {
		return withExit(exitHost, fmt.Errorf("daemon: %w", err))
	}
	if failure != nil {
		return withExit(exitHost, failure)
	}
	return nil
}
