package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/toolhostd/toolhostd/internal/wasmtime"
)

// version is set at link time with -ldflags "-X main.version=...".
var version = ""

func toolhostdVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the versions of toolhostd, wasmtime and Go",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "toolhostd %s\n", toolhostdVersion())
			fmt.Fprintf(out, "wasmtime  %s\n", wasmtime.Version)
			fmt.Fprintf(out, "go        %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}
