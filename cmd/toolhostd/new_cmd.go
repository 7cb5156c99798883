package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/toolhostd/toolhostd/internal/agentbuild"
)

func newNewCmd() *cobra.Command {
	var lang string
	cmd := &cobra.Command{
		Use:   "new NAME --lang js|go",
		Short: "Write a new agent project into ./NAME (. for the current directory)",
		Long: `New writes a small agent project into the directory NAME (created; it
must not exist or be empty), the agent named after its last element:

  js: agent.js, a JavaScript agent
  go: main.go, go.mod and go.sum, a Go agent requiring the SDK
      ` + agentbuild.SDKModule + ` ` + agentbuild.SDKVersion + `

and for both toolhostd.toml (a config that grants the agent the tooling
"everything", the MCP reference server run with npx), a README.md and a
.gitignore. The agent lists the tooling's tools, calls its echo tool with
the input and returns both. Build it with toolhostd build.

Exit status: 0 when the project is written; 64 for a usage error, a name
that is not an agent name or a directory that is not empty.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if lang == "" {
				return withExit(exitUsage, fmt.Errorf("--lang is required: %s", strings.Join(agentbuild.Langs, " or ")))
			}
			p, err := agentbuild.New(args[0], lang)
			if err != nil {
				return withExit(exitUsage, err)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "created %s (%s): %s\n", p.Dir, p.Lang, strings.Join(p.Files, ", "))
			fmt.Fprintf(w, "build and run it (toolhostd.toml runs the MCP reference server with npx):\n")
			if filepath.Clean(p.Dir) != "." {
				fmt.Fprintf(w, "  cd %s\n", shellQuote(p.Dir))
			}
			fmt.Fprintf(w, "  toolhostd build .\n  toolhostd --config toolhostd.toml run %s.wasm --input hi\n", p.Name)
			return nil
		},
	}
	cmd.Flags().StringVar(&lang, "lang", "", "the agent's language: "+strings.Join(agentbuild.Langs, " or "))
	return cmd
}

// shellQuote quotes p for a shell when it needs it.
func shellQuote(p string) string {
	if p == filepath.Clean(p) && !strings.ContainsAny(p, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}
