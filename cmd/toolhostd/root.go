package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes shared by every command.
const (
	exitOK      = 0
	exitFailure = 1  // the operation ran and failed (an agent's err, a tool error)
	exitHost    = 2  // trap, load or host failure
	exitUsage   = 64 // usage or config error (EX_USAGE)
)

// exitError carries a process exit code out of a command's RunE.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withExit wraps err so that the process exits with code.
func withExit(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// globalOptions are the flags every command sees.
type globalOptions struct {
	configPath string
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	opts := &globalOptions{}
	root := &cobra.Command{
		Use:           "toolhostd",
		Short:         "Host WebAssembly agents against MCP tool servers",
		Long:          "toolhostd loads agents (WebAssembly components) with wasmtime and connects them to the MCP tool servers\nconfigured as [tooling.<name>] entries of its TOML config.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&opts.configPath, "config", "",
		"config file (default: $TOOLHOSTD_CONFIG, then ./toolhostd.toml, then /etc/toolhostd/toolhostd.toml)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withExit(exitUsage, err) })
	root.AddCommand(
		newVersionCmd(),
		newConfigCmd(),
		newToolsCmd(), newCallCmd(), newResourcesCmd(), newReadCmd(),
		newProvidersCmd(opts), newChatCmd(opts),
		newNewCmd(), newBuildCmd(),
		newRunCmd(opts), newCompileCmd(opts),
		newServeCmd(opts),
		newWatchCmd(opts),
		newPsCmd(opts), newAgentCmd(opts), newToolingsCmd(opts), newReloadCmd(opts), newSendCmd(opts), newTraceCmd(opts), newKVCmd(opts), newOplogCmd(opts),
		newAuthCmd(opts),
	)
	return root
}

// execute runs the command line and returns the process exit code.
func execute(args []string, stdout, stderr io.Writer) int {
	return executeWithStdin(args, nil, stdout, stderr)
}

// executeWithStdin is execute reading standard input from stdin (nil:
// os.Stdin).
func executeWithStdin(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	if stdin != nil {
		root.SetIn(stdin)
	}
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "toolhostd:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if isUsageError(err) {
		return exitUsage
	}
	return exitFailure
}

// isUsageError reports errors cobra raises for a bad command line.
func isUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "requires exactly", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
