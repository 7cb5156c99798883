package main

// toolhostd kv: the operators' commands on the running daemon's key-value
// store, through the control API (docs/keyvalue.md).

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/toolhostd/toolhostd/internal/control"
)

func newKVCmd(opts *globalOptions) *cobra.Command {
	var socket string
	cmd := &cobra.Command{
		Use:   "kv",
		Short: "List, read, write, export and import the agents' key-value store",
		Long: `kv reaches the key-value store of the running toolhostd (toolhostd serve)
through its control API: the buckets an agent's wasi:keyvalue store.open
made (a per-session instance's own bucket is session/ID), their keys and
values, and export and import (JSON lines, values base64) for backups and
moves between backends. An operator is not bound by an agent's stores list
or store quota; what it writes counts in the agent's usage.

Exit status: 0 on success; 1 when the daemon refused or could not be
reached (kv get of a key without a value included); 64 for a usage error.`,
	}
	socketFlag(cmd, &socket)
	run := func(f func(cmd *cobra.Command, ctx context.Context, c *control.Client, args []string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			return withDaemon(cmd, opts, socket, func(ctx context.Context, c *control.Client) error { return f(cmd, ctx, c, args) })
		}
	}
	var prefix string
	ls := &cobra.Command{
		Use:   "ls [AGENT [BUCKET]]",
		Short: "List the agents that keep keys, an agent's buckets, or a bucket's keys",
		Args:  cobra.MaximumNArgs(2),
		RunE: run(func(cmd *cobra.Command, ctx context.Context, c *control.Client, args []string) error {
			out := cmd.OutOrStdout()
			switch len(args) {
			case 0:
				agents, err := c.KVAgents(ctx)
				return printLines(out, agents, err)
			case 1:
				buckets, err := c.KVBuckets(ctx, args[0])
				return printLines(out, buckets, err)
			}
			for cursor := ""; ; {
				keys, next, err := c.KVKeys(ctx, args[0], args[1], prefix, cursor)
				if err := printLines(out, keys, err); err != nil {
					return err
				}
				if next == "" {
					return nil
				}
				cursor = next
			}
		}),
	}
	ls.Flags().StringVar(&prefix, "prefix", "", "with BUCKET: only the keys that start with this")
	get := &cobra.Command{
		Use:   "get AGENT BUCKET KEY",
		Short: "Write a key's value to standard output, as it is (no newline added)",
		Args:  cobra.ExactArgs(3),
		RunE: run(func(cmd *cobra.Command, ctx context.Context, c *control.Client, args []string) error {
			v, err := c.KVGet(ctx, args[0], args[1], args[2])
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(v)
			return err
		}),
	}
	put := &cobra.Command{
		Use:   "put AGENT BUCKET KEY [VALUE|-]",
		Short: "Set a key's value: VALUE, or standard input when it is - or absent",
		Args:  cobra.RangeArgs(3, 4),
		RunE: run(func(cmd *cobra.Command, ctx context.Context, c *control.Client, args []string) error {
			var v []byte
			if len(args) == 4 && args[3] != "-" {
				v = []byte(args[3])
			} else {
				var err error
				if v, err = io.ReadAll(cmd.InOrStdin()); err != nil {
					return fmt.Errorf("reading the value from standard input: %w", err)
				}
			}
			return c.KVPut(ctx, args[0], args[1], args[2], v)
		}),
	}
	rm := &cobra.Command{
		Use:   "rm AGENT BUCKET KEY",
		Short: "Remove a key (one without a value is not an error)",
		Args:  cobra.ExactArgs(3),
		RunE: run(func(_ *cobra.Command, ctx context.Context, c *control.Client, args []string) error {
			return c.KVRemove(ctx, args[0], args[1], args[2])
		}),
	}
	export := &cobra.Command{
		Use:   "export [AGENT [BUCKET]]",
		Short: "Write every key (of AGENT, of BUCKET) to standard output as JSON lines, values base64",
		Args:  cobra.MaximumNArgs(2),
		RunE: run(func(cmd *cobra.Command, ctx context.Context, c *control.Client, args []string) error {
			agent, bucket := "", ""
			if len(args) > 0 {
				agent = args[0]
			}
			if len(args) > 1 {
				bucket = args[1]
			}
			return c.KVExport(ctx, cmd.OutOrStdout(), agent, bucket)
		}),
	}
	imp := &cobra.Command{
		Use:   "import",
		Short: "Write the keys of an export read from standard input (replacing those that exist)",
		Args:  cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, ctx context.Context, c *control.Client, _ []string) error {
			n, err := c.KVImport(ctx, cmd.InOrStdin())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "imported %d keys\n", n)
			return nil
		}),
	}
	cmd.AddCommand(ls, get, put, rm, export, imp)
	return cmd
}

// printLines writes each of lines on a line of its own, unless err.
func printLines(w io.Writer, lines []string, err error) error {
	if err != nil {
		return err
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}
