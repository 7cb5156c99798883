package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
)

// The commands that talk to a running daemon over its control socket: ps,
// agent start|stop|restart, toolings, reload.

// socketFlag adds --socket to cmd (persistent, so that subcommands see it).
func socketFlag(cmd *cobra.Command, socket *string) {
	cmd.PersistentFlags().StringVar(socket, "socket", "",
		"the daemon's control socket (default: [host] control_socket of the config if one is found, else "+control.FallbackSocket+
			" or $RUNTIME_DIRECTORY/"+control.SocketName+")")
}

// dialDaemon connects to the daemon: --socket, else the config's
// control_socket when a config resolves, else control.DefaultSocket().
func dialDaemon(opts *globalOptions, socket string) (*control.Client, error) {
	if socket == "" {
		path, err := config.Resolve(opts.configPath)
		switch {
		case err == nil:
			c, err := config.Load(path)
			if err != nil {
				return nil, withExit(exitUsage, fmt.Errorf("%w\n(pass --socket to reach the daemon without a config)", err))
			}
			socket = c.Host.ControlSocket
		case !errors.Is(err, config.ErrNoConfig) || opts.configPath != "":
			return nil, withExit(exitUsage, err)
		}
	}
	c, err := control.Dial(socket) // "" is the default socket
	if err != nil {
		return nil, withExit(exitFailure, err)
	}
	return c, nil
}

// withDaemon runs f with a client of the daemon; every failure exits 1.
func withDaemon(cmd *cobra.Command, opts *globalOptions, socket string, f func(context.Context, *control.Client) error) error {
	c, err := dialDaemon(opts, socket)
	if err != nil {
		return err
	}
	defer c.Close()
	return withExit(exitFailure, f(cmd.Context(), c))
}

func newPsCmd(opts *globalOptions) *cobra.Command {
	var socket string
	var asJSON, inCluster bool
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List the running daemon's agents",
		Long: "ps lists the agents of the running toolhostd (toolhostd serve): state and for how long,\n" +
			"restarts, traps, envelopes waiting in the inbox, the last error and, for a durable agent,\n" +
			"what its oplog holds: entries/bytes (a per-session agent's over its sessions, their count\n" +
			"in parentheses; toolhostd oplog prints one).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDaemon(cmd, opts, socket, func(ctx context.Context, c *control.Client) error {
				if inCluster {
					st, err := c.Cluster(ctx)
					switch {
					case err != nil:
						return err
					case asJSON:
						return writeJSON(cmd.OutOrStdout(), clusterRows(st))
					}
					return clusterTable(cmd.OutOrStdout(), st)
				}
				agents, err := c.Agents(ctx)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(out, agents)
				}
				return agentTable(out, agents, time.Now())
			})
		},
	}
	socketFlag(cmd, &socket)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the agents as JSON")
	cmd.Flags().BoolVar(&inCluster, "cluster", false, "list every agent of the cluster with its host, and flag hosts on another config")
	return cmd
}

func agentTable(w io.Writer, agents []control.AgentStatus, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tSINCE\tRESTARTS\tTRAPS\tINBOX\tOPLOG\tLAST ERROR")
	for _, a := range agents {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", a.Name, a.State, age(a.Since, now), a.Restarts, a.Traps, a.Inbox, oplogCell(a), oneLine(a.LastError))
		// A per-session agent's instances, one row each: agent/session.
		for _, in := range a.Instances {
			if in.Session == "" && len(a.Instances) == 1 && in.State == a.State {
				continue // a single agent's one instance is its row
			}
			session := in.Session
			if session == "" {
				session = "(one-off)"
			}
			fmt.Fprintf(tw, "%s/%s\t%s\t%s\t-\t-\t-\t-\tmessages=%d idle=%s\n", a.Name, session, in.State, age(in.Since, now), in.Messages, age(in.LastActivity, now))
		}
	}
	return tw.Flush()
}

// age is how long ago t was, e.g. "3m12s", "2h5m", "4d3h" ("-" for zero).
func age(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return d.Truncate(time.Second).String()
	case d < time.Hour:
		return fmt.Sprintf("%dm%ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// oneLine keeps a table row on one line.
func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func newAgentCmd(opts *globalOptions) *cobra.Command {
	var socket string
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Start, stop or restart one of the running daemon's agents",
	}
	socketFlag(cmd, &socket)
	for _, action := range []struct {
		name, short string
		do          func(*control.Client, context.Context, string) (control.AgentStatus, error)
	}{
		{"start", "Start an agent", (*control.Client).StartAgent},
		{"stop", "Stop an agent (it gets its shutdown envelope and stop_grace to return)", (*control.Client).StopAgent},
		{"restart", "Stop an agent, then start it again", (*control.Client).RestartAgent},
	} {
		cmd.AddCommand(&cobra.Command{
			Use:   action.name + " NAME",
			Short: action.short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return withDaemon(cmd, opts, socket, func(ctx context.Context, c *control.Client) error {
					a, err := action.do(c, ctx, args[0])
					if err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", a.Name, a.State)
					return nil
				})
			},
		})
	}
	return cmd
}

func newToolingsCmd(opts *globalOptions) *cobra.Command {
	var socket string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "toolings",
		Short: "List the running daemon's toolings",
		Long: "toolings lists the toolings of the running toolhostd: session state, transport, the server's\n" +
			"name and version, tool count, requests in flight, session restarts and the last error.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDaemon(cmd, opts, socket, func(ctx context.Context, c *control.Client) error {
				list, err := c.Toolings(ctx)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(out, list)
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tSTATE\tTRANSPORT\tSERVER\tTOOLS\tIN-FLIGHT\tRESTARTS\tLAST ERROR")
				for _, t := range list {
					server := strings.TrimSpace(t.ServerName + " " + t.ServerVersion)
					if server == "" {
						server = "-"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", t.Name, t.State, t.Transport, server, t.Tools, t.InFlight, t.Restarts, oneLine(t.LastError))
				}
				return tw.Flush()
			})
		},
	}
	socketFlag(cmd, &socket)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the toolings as JSON")
	return cmd
}

func newReloadCmd(opts *globalOptions) *cobra.Command {
	var socket string
	cmd := &cobra.Command{
		Use:   "reload",
		Short: "Make the running daemon re-read its config",
		Long: "reload asks the running toolhostd to re-read and validate its config. When the new config\n" +
			"is refused, the old one keeps running and the errors are printed; the exit code is 1.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDaemon(cmd, opts, socket, func(ctx context.Context, c *control.Client) error {
				if err := c.Reload(ctx); err != nil {
					return fmt.Errorf("reload refused (the running config stays):\n%w", err)
				}
				fmt.Fprintln(cmd.OutOrStdout(), "reloaded")
				return nil
			})
		},
	}
	socketFlag(cmd, &socket)
	return cmd
}
