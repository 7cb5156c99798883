package main

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/tracing"
)

var traceIDArg = regexp.MustCompile(`^[0-9a-f]{32}$`)

func newTraceCmd(g *globalOptions) *cobra.Command {
	var socket string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "trace MESSAGE_ID|TRACE_ID",
		Short: "Print a trace the running daemon keeps, as a tree of its spans",
		Long: `trace prints one of the last traces the running toolhostd keeps in memory
([host] traces, or OTEL_EXPORTER_OTLP_ENDPOINT): the trace whose id is
TRACE_ID (32 hex digits), or the one of the message MESSAGE_ID (the id send
--json prints), as an indented tree: each span with its duration, and for
model calls their tokens. --json prints the spans as the control API's
GET /v1/traces/{id} answers them.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := dialDaemon(g, socket)
			if err != nil {
				return withExit(exitHost, err)
			}
			defer c.Close()
			id := args[0]
			if !traceIDArg.MatchString(id) {
				list, err := c.Traces(cmd.Context(), tracing.Filter{Message: id})
				if err != nil {
					return withExit(exitHost, err)
				}
				if len(list) == 0 {
					return withExit(exitFailure, fmt.Errorf("no trace of message %s is kept (not traced, or it ended long ago)", id))
				}
				id = list[0].TraceID
			}
			t, err := c.Trace(cmd.Context(), id)
			if err != nil {
				if ae := (*control.APIError)(nil); errors.As(err, &ae) && ae.Status == 404 {
					return withExit(exitFailure, err)
				}
				return withExit(exitHost, err)
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), t)
			}
			printTrace(cmd.OutOrStdout(), t)
			return nil
		},
	}
	cmd.Flags().StringVar(&socket, "socket", "", "the daemon's control socket (default: as for ps)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the spans as JSON")
	return cmd
}

// printTrace writes t as a tree: roots (spans whose parent is not in the
// trace: the caller's) first, children under their parent by start time.
func printTrace(w io.Writer, t tracing.Trace) {
	spans := tracing.Sorted(t.Spans)
	byID := map[string]bool{}
	for _, s := range spans {
		byID[s.SpanID] = true
	}
	children := map[string][]tracing.Span{}
	var roots []tracing.Span
	var start, end time.Time
	for _, s := range spans {
		if s.ParentID == "" || !byID[s.ParentID] {
			roots = append(roots, s)
		} else {
			children[s.ParentID] = append(children[s.ParentID], s)
		}
		if start.IsZero() || s.Start.Before(start) {
			start = s.Start
		}
		if s.End.After(end) {
			end = s.End
		}
	}
	fmt.Fprintf(w, "trace %s: %d spans, %s\n", t.TraceID, len(spans), duration(end.Sub(start)))
	var walk func(s tracing.Span, depth int)
	walk = func(s tracing.Span, depth int) {
		fmt.Fprintf(w, "%s%s  %s%s\n", strings.Repeat("  ", depth), s.Name, duration(s.End.Sub(s.Start)), details(s))
		for _, c := range children[s.SpanID] {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
}

// details are a span's notable attributes, in brackets.
func details(s tracing.Span) string {
	var parts []string
	if v, ok := s.Attributes["gen_ai.usage.input_tokens"]; ok {
		parts = append(parts, fmt.Sprintf("tokens %v in, %v out", v, s.Attributes["gen_ai.usage.output_tokens"]))
	}
	for _, k := range []string{"toolhost.message.id", "gen_ai.conversation.id", "gen_ai.response.finish_reasons", "mcp.session.id"} {
		if v, ok := s.Attributes[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %v", k[strings.LastIndex(k, ".")+1:], v))
		}
	}
	if s.Status == "error" {
		parts = append(parts, "error: "+s.StatusText)
	}
	if len(parts) == 0 {
		return ""
	}
	return "  [" + strings.Join(parts, "; ") + "]"
}

// duration rounds d for reading.
func duration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}
