package main

// toolhostd oplog: the oplog a durable agent's instance keeps in the
// running daemon, through the control API (GET /v1/agents/{name}/oplog).

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/toolhostd/toolhostd/internal/control"
)

func newOplogCmd(opts *globalOptions) *cobra.Command {
	var socket string
	var content, asJSON bool
	cmd := &cobra.Command{
		Use:   "oplog AGENT[/SESSION]",
		Short: "Print the oplog of a durable agent's instance in the running daemon",
		Long: `oplog prints the oplog the running toolhostd keeps for the instance of the
durable agent AGENT ([agent.AGENT] durable = true), or for the instance of
session SESSION of a per-session agent: a line with its key, the digest of
the component that began it and when its instance started, then one row per
entry: its seq, kind (result, started, completed, ...), the host call, the
size of its data and when it was appended, after the start. --content
prints each entry's data below its row: quoted when it is text, else in hex.
--json prints the log as the control API's GET /v1/agents/{name}/oplog
answers it (with --content, the data base64).

An oplog lives while its instance runs, and after it was cut off (a crash,
a trap, a stop of the daemon) until its next start replays it; a run that
ends ends it. toolhostd ps shows each durable agent's entries and bytes.

Exit status: 0 on success; 1 when the agent has no oplog, is unknown, or
the daemon could not be reached; 64 for a usage error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			agent, session, _ := strings.Cut(args[0], "/")
			if agent == "" {
				return withExit(exitUsage, fmt.Errorf("oplog %q: want AGENT or AGENT/SESSION", args[0]))
			}
			return withDaemon(cmd, opts, socket, func(ctx context.Context, c *control.Client) error {
				l, err := c.Oplog(ctx, agent, session, content)
				switch {
				case err != nil:
					return err
				case asJSON:
					return writeJSON(cmd.OutOrStdout(), l)
				}
				return printOplog(cmd.OutOrStdout(), l, content)
			})
		},
	}
	socketFlag(cmd, &socket)
	cmd.Flags().BoolVar(&content, "content", false, "print each entry's data (the recorded result) below its row")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the log as JSON")
	return cmd
}

// printOplog writes l: a header line, then a table of its entries, each
// followed by its data with content.
func printOplog(w io.Writer, l control.Oplog, content bool) error {
	var size int
	for _, e := range l.Entries {
		size += e.Bytes
	}
	started := "-"
	if !l.Started.IsZero() {
		started = l.Started.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	fmt.Fprintf(w, "oplog %s: component %s, started %s, %d entries, %s of data\n",
		l.Key, shortDigest(l.Component), started, len(l.Entries), byteSize(int64(size)))
	rows := [][]string{{"SEQ", "KIND", "CALL", "BYTES", "AT"}}
	for _, e := range l.Entries {
		rows = append(rows, []string{strconv.FormatUint(e.Seq, 10), e.Kind, e.Call, strconv.Itoa(e.Bytes), sinceStart(e.At.Sub(l.Started))})
	}
	// Widths over every row: the data lines between them do not break the
	// columns as they would a tabwriter's.
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, cell := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	for i, r := range rows {
		var b strings.Builder
		for j, cell := range r {
			if j < len(r)-1 {
				fmt.Fprintf(&b, "%-*s  ", widths[j], cell)
			} else {
				b.WriteString(cell)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		if content && i > 0 {
			writeData(w, l.Entries[i-1].Data)
		}
	}
	return nil
}

// writeData writes an entry's data, indented: quoted when it is printable
// text, else as a hex dump.
func writeData(w io.Writer, data []byte) {
	const indent = "    "
	if printable(data) {
		fmt.Fprintf(w, "%s%s\n", indent, strconv.Quote(string(data)))
		return
	}
	for _, line := range strings.Split(strings.TrimRight(hex.Dump(data), "\n"), "\n") {
		fmt.Fprintf(w, "%s%s\n", indent, line)
	}
}

// printable reports whether data is UTF-8 text without control characters
// but white space.
func printable(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	for _, r := range string(data) {
		if !unicode.IsPrint(r) && !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// shortDigest is a content digest's first 12 digits ("-" for none).
func shortDigest(d string) string {
	switch {
	case d == "":
		return "-"
	case len(d) > 12:
		return d[:12]
	}
	return d
}

// sinceStart is d after an instance's start, for reading: "+850µs",
// "+12.3ms", "+1.23s", "+2m3.4s".
func sinceStart(d time.Duration) string {
	sign := "+"
	if d < 0 {
		sign, d = "-", -d
	}
	switch {
	case d < time.Millisecond:
		d = d.Round(time.Microsecond)
	case d < time.Second:
		d = d.Round(100 * time.Microsecond)
	case d < time.Minute:
		d = d.Round(10 * time.Millisecond)
	default:
		d = d.Round(100 * time.Millisecond)
	}
	return sign + d.String()
}

// byteSize is n bytes for reading: "812B", "3.4KiB", "12MiB".
func byteSize(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%dB", n)
	}
	v := float64(n)
	unit := ""
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v /= 1024
		unit = u
		if v < 1024 {
			break
		}
	}
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 1, 64) + unit
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + unit
}

// oplogCell is ps's OPLOG column: a durable agent's entries and their
// stored bytes ("12/3.4KiB"; for a per-session agent, over its sessions,
// and how many have one: "12/3.4KiB(2)"), "-" for an agent that is not
// durable.
func oplogCell(a control.AgentStatus) string {
	o := a.Oplog
	if o == nil {
		return "-"
	}
	s := fmt.Sprintf("%d/%s", o.Entries, byteSize(o.Bytes))
	if o.Logs > 0 {
		s += fmt.Sprintf("(%d)", o.Logs)
	}
	return s
}
