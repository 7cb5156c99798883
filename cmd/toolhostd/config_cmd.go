package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/toolhostd/toolhostd/internal/config"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check or print toolhostd's TOML configuration",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newConfigValidateCmd(), newConfigDefaultCmd())
	return cmd
}

func newConfigValidateCmd() *cobra.Command {
	var noFiles bool
	cmd := &cobra.Command{
		Use:   "validate [file]",
		Short: "Check a config file and print every problem with file:line:col",
		Long: "validate loads the config file (the argument, else --config, else $TOOLHOSTD_CONFIG, else\n" +
			"./toolhostd.toml, else /etc/toolhostd/toolhostd.toml), prints each problem on its own line\n" +
			"and exits 64 if there is any, as serve and run do for a bad config. Each agent's component file\n" +
			"must exist (--no-files skips that, for a config checked where its components are not, such as\n" +
			"an image's). Secret references are checked for syntax, never resolved.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			flag, _ := cmd.Flags().GetString("config")
			if len(args) == 1 {
				flag = args[0]
			}
			path, err := config.Resolve(flag)
			if err != nil {
				return withExit(exitUsage, err)
			}
			c, err := config.Load(path)
			if err == nil && !noFiles {
				err = c.CheckFiles() // the agents' component files exist, as serve will load them
			}
			var errs config.Errors
			switch {
			case errors.As(err, &errs):
				printErrors(cmd.ErrOrStderr(), errs)
				return withExit(exitUsage, fmt.Errorf("%s: %d %s", path, len(errs), plural(len(errs), "error", "errors")))
			case err != nil:
				return withExit(exitUsage, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ok: %s: %s, %s\n", path, count(len(c.Tooling), "tooling"), count(len(c.Agent), "agent"))
			return nil
		},
	}
	cmd.Flags().BoolVar(&noFiles, "no-files", false, "do not check that the agents' component files exist")
	return cmd
}

func newConfigDefaultCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "default",
		Short: "Print a commented example config with every key and its default",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := io.WriteString(cmd.OutOrStdout(), config.Default())
			return err
		},
	}
}

func printErrors(w io.Writer, errs config.Errors) {
	for _, e := range errs {
		fmt.Fprintln(w, e.Error())
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// count renders n with its noun, plural unless n is 1: "1 agent", "2 toolings".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
