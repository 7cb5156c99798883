package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhostd/toolhostd/internal/agentbuild"
	"github.com/toolhostd/toolhostd/wit"
)

func newBuildCmd() *cobra.Command {
	var o agentbuild.Options
	cmd := &cobra.Command{
		Use:   "build PATH [-o OUT.wasm] [--toolchain qjs|spidermonkey]",
		Short: "Build a JS file or a Go main package into an agent component",
		Long: `Build turns PATH into a WebAssembly component of the world agent of the WIT
this toolhostd serves (` + wit.Package() + `, embedded in the binary):

  a .js or .mjs file, or a directory with an agent.js: a JS agent, built
    with componentize-qjs (QuickJS; --toolchain qjs, the default) or
    componentize-js (SpiderMonkey; --toolchain spidermonkey);
  a directory with .go files: a Go main package, built with
    GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared and componentized
    with jco and the WASI preview1 reactor adapter. The Go SDK
    ` + agentbuild.SDKModule + ` ` + agentbuild.SDKVersion + ` is served
    from the copy toolhostd embeds, through a module proxy in its cache.

The component goes to OUT (-o; into it when it is a directory), by default
beside PATH: hello.js makes hello.wasm, the directory hello makes
hello/hello.wasm.

The npm packages of each toolchain (componentize-qjs; componentize-js; jco
for Go) are installed on its first use, at the versions this toolhostd
pins, into $XDG_CACHE_HOME/toolhostd/toolchain-NAME-HASH: Node.js and npm
must be on PATH, and Go for a Go agent.

Prints the component, its size and the build's duration on stdout. Exit
status: 0 when the component is written; 1 when the build fails; 64 for a
usage error or a PATH that is not an agent's source.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Path = args[0]
			o.Progress = cmd.ErrOrStderr()
			// SIGINT or SIGTERM stop the toolchain and remove what the
			// build had written (its work directory, a partial install).
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := agentbuild.Build(ctx, o)
			var ie *agentbuild.InputError
			if errors.As(err, &ie) {
				return withExit(exitUsage, err)
			} else if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %.1f MB, %s, %v\n", res.Out, float64(res.Size)/1e6, res.Toolchain, res.Elapsed.Round(10*time.Millisecond))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Out, "output", "o", "", "the component to write (default: beside PATH, PATH's name with .wasm)")
	f.StringVar(&o.Toolchain, "toolchain", "", "a JS agent's toolchain: "+strings.Join(agentbuild.Toolchains, " or ")+" (default qjs)")
	return cmd
}
