package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// The operator commands that talk to one configured tooling: tools, call,
// resources, read. Each starts the tooling's session, runs one operation
// and stops it.

func newToolsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tools NAME",
		Short: "List the tools of a configured tooling",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withTooling(cmd, args[0], func(ctx context.Context, t tooling.Tooling) error {
				tools, err := t.ListTools(ctx)
				if err != nil {
					return withExit(exitFailure, err)
				}
				out := cmd.OutOrStdout()
				if asJSON {
					type jsonTool struct {
						Name        string          `json:"name"`
						Description *string         `json:"description,omitempty"`
						InputSchema json.RawMessage `json:"inputSchema"`
					}
					list := make([]jsonTool, len(tools))
					for i, tl := range tools {
						list[i] = jsonTool{tl.Name, tl.Description, json.RawMessage(tl.InputSchema)}
					}
					return writeJSON(out, list)
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tDESCRIPTION")
				for _, tl := range tools {
					fmt.Fprintf(tw, "%s\t%s\n", tl.Name, firstLine(tl.Description))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the tools as JSON (with their input schemas)")
	return cmd
}

func newCallCmd() *cobra.Command {
	var progress bool
	cmd := &cobra.Command{
		Use:   "call NAME TOOL [JSON]",
		Short: "Call one tool and print its tool-result as JSON",
		Long: "call calls TOOL on the tooling NAME with the JSON object of arguments (default {}), waits for\n" +
			"it (bounded by the tooling's call_timeout; Ctrl-C cancels it on the server) and prints the\n" +
			"tool-result {name, arguments, value}. A result with isError true is printed and exits 0;\n" +
			"a failure exits 1 with its error code. --progress prints the server's progress notifications\n" +
			"about the call to stderr.",
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			arguments := "{}"
			if len(args) == 3 {
				arguments = args[2]
			}
			return withTooling(cmd, args[0], func(ctx context.Context, t tooling.Tooling) error {
				if progress {
					ctx = tooling.WithProgress(ctx, progressPrinter(cmd.ErrOrStderr()))
				}
				res, err := t.CallTool(ctx, args[1], json.RawMessage(arguments))
				if err != nil {
					return withExit(exitFailure, err)
				}
				return writeJSON(cmd.OutOrStdout(), struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
					Value     json.RawMessage `json:"value"`
				}{res.Name, json.RawMessage(res.Arguments), json.RawMessage(res.Value)})
			})
		},
	}
	cmd.Flags().BoolVar(&progress, "progress", false, "print the server's progress notifications to stderr")
	return cmd
}

// progressPrinter writes one line per progress notification to w:
// "progress: TOOL 3/10 message" (the total only when the server sent one).
func progressPrinter(w io.Writer) func(tooling.Progress) {
	var mu sync.Mutex
	return func(p tooling.Progress) {
		line := fmt.Sprintf("progress: %s %s", p.Tool, strconv.FormatFloat(p.Progress, 'g', -1, 64))
		if p.Total > 0 {
			line += "/" + strconv.FormatFloat(p.Total, 'g', -1, 64)
		}
		if p.Message != "" {
			line += " " + p.Message
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(w, line)
	}
}

func newResourcesCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "resources NAME",
		Short: "List the resources of a configured tooling",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withTooling(cmd, args[0], func(ctx context.Context, t tooling.Tooling) error {
				res, err := t.ListResources(ctx)
				if err != nil {
					return withExit(exitFailure, err)
				}
				out := cmd.OutOrStdout()
				if asJSON {
					type jsonResource struct {
						URI         string  `json:"uri"`
						Name        string  `json:"name"`
						Description *string `json:"description,omitempty"`
						MIMEType    *string `json:"mimeType,omitempty"`
					}
					list := make([]jsonResource, len(res))
					for i, r := range res {
						list[i] = jsonResource{r.URI, r.Name, r.Description, r.MIMEType}
					}
					return writeJSON(out, list)
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "URI\tNAME\tMIME TYPE")
				for _, r := range res {
					mt := "-"
					if r.MIMEType != nil {
						mt = *r.MIMEType
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", r.URI, r.Name, mt)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the resources as JSON")
	return cmd
}

func newReadCmd() *cobra.Command {
	var raw bool
	cmd := &cobra.Command{
		Use:   "read NAME URI",
		Short: "Read one resource and print its resource-content as JSON",
		Long: "read prints {uri, mimeType, content}: content is text for text/* (or no) mime type, base64\n" +
			"otherwise. --raw prints only the content, base64 decoded back to bytes.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withTooling(cmd, args[0], func(ctx context.Context, t tooling.Tooling) error {
				rc, err := t.ReadResource(ctx, args[1])
				if err != nil {
					return withExit(exitFailure, err)
				}
				out := cmd.OutOrStdout()
				if raw {
					mt := ""
					if rc.MIMEType != nil {
						mt = *rc.MIMEType
					}
					if mcpclient.IsTextMIME(mt) {
						_, err := io.WriteString(out, rc.Content)
						return err
					}
					b, err := base64.StdEncoding.DecodeString(rc.Content)
					if err != nil {
						return withExit(exitHost, fmt.Errorf("decoding the content: %w", err))
					}
					_, err = out.Write(b)
					return err
				}
				return writeJSON(out, struct {
					URI      string  `json:"uri"`
					MIMEType *string `json:"mimeType,omitempty"`
					Content  string  `json:"content"`
				}{rc.URI, rc.MIMEType, rc.Content})
			})
		},
	}
	cmd.Flags().BoolVar(&raw, "raw", false, "print only the content, as bytes")
	return cmd
}

// withTooling loads the config, builds its graph with only the tooling
// called name started (package system, as serve builds it; no host, no
// provider opened), runs f (cancelled by SIGINT/SIGTERM) and stops the
// session.
func withTooling(cmd *cobra.Command, name string, f func(context.Context, tooling.Tooling) error) error {
	flag, _ := cmd.Flags().GetString("config")
	sys, log, err := oneShotSystem(&globalOptions{configPath: flag}, name, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	defer sys.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopHub := sys.Start()
	defer stopHub()
	return f(ctx, sys.Toolings[name])
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func firstLine(s *string) string {
	if s == nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(*s), "\n")
	return strings.TrimSpace(line)
}
