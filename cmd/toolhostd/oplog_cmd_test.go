package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestOplogCommand: `toolhostd oplog` and ps's OPLOG column against a
// real `toolhostd serve` whose durable agent is mid-loop: its call 4 is
// held by the count server, so its oplog holds calls 1..3 (and whatever
// else the guest asked the host) and stays until the test's cleanup
// kills the daemon.
func TestOplogCommand(t *testing.T) {
	const n, hold = 6, 4
	cs, url := newCountServer(t, hold)
	echo, err := filepath.Abs(testdata("echo.wat"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "ctl.sock")
	input, _ := json.Marshal(map[string]any{"tool": "step", "n": n})
	cfg := writeConfigFile(t, dir, "toolhostd.toml", fmt.Sprintf(`version = 1
[host]
cache_dir = %q
state_dir = %q
control_socket = %q

%s
[agent.plain]
component = %q
restart = "never"
input = "hi"
`, filepath.Join(testenv.Root(t), "build", "test-cache"), filepath.Join(dir, "state"), sock,
		loopTables(url, testenv.Agent(t, "test-agents", "durable"), fmt.Sprintf("restart = \"never\"\ninput = '%s'\n", input)), echo))
	noConfig(t)
	srv := startServe(t, cfg)
	testenv.Recv(t, cs.held, 60*time.Second, "the durable agent's call 4")

	// --json: the API's answer; the calls 1..3 are in it.
	code, out, errOut := runCLI(t, "oplog", "loop", "--json", "--content", "--socket", sock)
	if code != 0 {
		t.Fatalf("oplog --json: exit %d: %s\n%s", code, errOut, srv.out.String())
	}
	var l control.Oplog
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("oplog --json: %v\n%s", err, out)
	}
	calls, dataBytes := 0, 0
	for i, e := range l.Entries {
		if e.Seq != uint64(i+1) || e.Kind == "" || e.Call == "" || e.Bytes != len(e.Data) || e.At.Before(l.Started) {
			t.Errorf("entry %d: %+v", i+1, e)
		}
		if strings.HasSuffix(e.Call, "call-tool-blocking") && bytes.Contains(e.Data, fmt.Appendf(nil, "step %d #", calls+1)) {
			calls++
		}
		dataBytes += e.Bytes
	}
	if l.Key != "loop" || len(l.Component) < 12 || l.Started.IsZero() || calls != hold-1 {
		t.Fatalf("oplog: key %q, component %q, started %v, %d of the calls 1..%d in %d entries\n%s", l.Key, l.Component, l.Started, calls, hold-1, len(l.Entries), out)
	}

	// The table: a header line, then a row per entry.
	code, out, errOut = runCLI(t, "oplog", "loop", "--socket", sock)
	if code != 0 {
		t.Fatalf("oplog: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	wantHead := fmt.Sprintf("oplog loop: component %s, started %s, %d entries, %s of data",
		l.Component[:12], l.Started.UTC().Format("2006-01-02T15:04:05.000Z"), len(l.Entries), byteSize(int64(dataBytes)))
	if len(lines) != len(l.Entries)+2 || lines[0] != wantHead || !fieldsMatch(lines[1], "SEQ KIND CALL BYTES AT") {
		t.Fatalf("oplog printed:\n%s\nwant %q, the columns and %d rows", out, wantHead, len(l.Entries))
	}
	for i, e := range l.Entries {
		want := fmt.Sprintf("%d %s %s %d %s", e.Seq, e.Kind, e.Call, e.Bytes, sinceStart(e.At.Sub(l.Started)))
		if !fieldsMatch(lines[i+2], want) || !strings.HasPrefix(strings.Fields(lines[i+2])[4], "+") {
			t.Errorf("row %d: %q, want %q", i+1, lines[i+2], want)
		}
	}

	// --content: the data under each row, indented (TestOplogPrint has
	// the forms), the same as --json --content's.
	code, out, errOut = runCLI(t, "oplog", "loop", "--content", "--socket", sock)
	if code != 0 {
		t.Fatalf("oplog --content: exit %d: %s", code, errOut)
	}
	var want bytes.Buffer
	if err := printOplog(&want, l, true); err != nil {
		t.Fatal(err)
	}
	if out != want.String() || strings.Count(out, "\n    ") < len(l.Entries) {
		t.Errorf("oplog --content printed:\n%s\nwant:\n%s", out, want.String())
	}

	// ps: the OPLOG column, the durable agent's entries and stored bytes.
	code, out, errOut = runCLI(t, "ps", "--json", "--socket", sock)
	if code != 0 {
		t.Fatalf("ps --json: exit %d: %s", code, errOut)
	}
	var agents []control.AgentStatus
	if err := json.Unmarshal([]byte(out), &agents); err != nil || len(agents) != 2 {
		t.Fatalf("ps --json: %v\n%s", err, out)
	}
	loop, plain := agents[0], agents[1]
	if o := loop.Oplog; o == nil || o.Entries != len(l.Entries) || o.Bytes < int64(dataBytes) || o.Logs != 0 {
		t.Fatalf("ps: loop's oplog %+v, want %d entries of at least %d bytes", o, len(l.Entries), dataBytes)
	}
	if plain.Oplog != nil {
		t.Errorf("ps: plain's oplog %+v", plain.Oplog)
	}
	code, out, errOut = runCLI(t, "ps", "--socket", sock)
	if code != 0 {
		t.Fatalf("ps: exit %d: %s", code, errOut)
	}
	lines = strings.Split(strings.TrimRight(out, "\n"), "\n")
	cell := fmt.Sprintf("%d/%s", loop.Oplog.Entries, byteSize(loop.Oplog.Bytes))
	if len(lines) != 3 || !fieldsMatch(lines[0], "NAME STATE SINCE RESTARTS TRAPS INBOX OPLOG LAST ERROR") ||
		!fieldsMatch(lines[1], "loop running * 0 0 0 "+cell) || !fieldsMatch(lines[2], "plain * * 0 0 0 -") {
		t.Errorf("ps:\n%s\nwant loop's OPLOG %s and plain's -", out, cell)
	}

	// The metrics count the appends.
	code, out, _ = runCLI(t, "oplog", "loop", "--socket", sock) // the daemon is still mid-loop
	if code != 0 || cs.count(fmt.Sprintf("step %d", hold+1)) != 0 {
		t.Fatalf("the agent moved on past its held call: exit %d\n%s", code, out)
	}
	c, err := control.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := c.Metrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		fmt.Sprintf("toolhostd_oplog_appends_total %d", len(l.Entries)),
		fmt.Sprintf("toolhostd_oplog_entries_total %d", len(l.Entries)),
		fmt.Sprintf("toolhostd_oplog_bytes_total %d", loop.Oplog.Bytes),
		"toolhostd_oplog_commits_total ",
	} {
		if !strings.Contains(string(m), w) {
			t.Errorf("/metrics has no %q", w)
		}
	}

	// The agents without an oplog, and bad names.
	for _, tc := range []struct {
		arg    string
		code   int
		stderr string
	}{
		{"plain", exitFailure, `no oplog of "plain": the agent is not durable`},
		{"nope", exitFailure, `no such agent: "nope"`},
		{"loop/s1", exitFailure, `"loop" is not a per-session agent`},
		{"/s1", exitUsage, "want AGENT or AGENT/SESSION"},
	} {
		code, out, errOut := runCLI(t, "oplog", tc.arg, "--socket", sock)
		if code != tc.code || out != "" || !strings.Contains(errOut, tc.stderr) {
			t.Errorf("oplog %s: exit %d, stdout %q, stderr %q; want %d and %q", tc.arg, code, out, errOut, tc.code, tc.stderr)
		}
	}
}

// TestOplogPrint: the table with --content (text quoted, bytes in hex),
// an empty log, the sizes and times as printed.
func TestOplogPrint(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	l := control.Oplog{Key: "talk/alice", Component: "9f86d081884c7d659a2feaa0c55ad015", Started: start, Entries: []control.OplogEntry{
		{Seq: 1, Kind: "result", Call: "wasi:clocks/wall-clock@0.2.0#now", Bytes: 3, At: start.Add(850 * time.Microsecond), Data: []byte{0, 1, 0xff}},
		{Seq: 2, Kind: "started", Call: "toolhost:agent/tooling@0.3.0#[method]tooling.call-tool-blocking", Bytes: 14, At: start.Add(12345 * time.Microsecond), Data: []byte(`{"i":1} "x"` + "\n\t!")},
		{Seq: 10, Kind: "completed", Call: "c", Bytes: 0, At: start.Add(2*time.Minute + 3456*time.Millisecond)},
	}}
	var b bytes.Buffer
	if err := printOplog(&b, l, true); err != nil {
		t.Fatal(err)
	}
	want := `oplog talk/alice: component 9f86d081884c, started 2026-03-01T12:00:00.123Z, 3 entries, 17B of data
SEQ  KIND       CALL                                                             BYTES  AT
1    result     wasi:clocks/wall-clock@0.2.0#now                                 3      +850µs
    00000000  00 01 ff                                          |...|
2    started    toolhost:agent/tooling@0.3.0#[method]tooling.call-tool-blocking  14     +12.3ms
    "{\"i\":1} \"x\"\n\t!"
10   completed  c                                                                0      +2m3.5s
    ""
`
	if b.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := printOplog(&b, control.Oplog{Key: "loop"}, false); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != "oplog loop: component -, started -, 0 entries, 0B of data\nSEQ  KIND  CALL  BYTES  AT\n" {
		t.Errorf("an empty log printed:\n%s", got)
	}
	for n, want := range map[int64]string{0: "0B", 1023: "1023B", 1024: "1.0KiB", 3500: "3.4KiB", 12 << 20: "12MiB", 5 << 40: "5.0TiB"} {
		if got := byteSize(n); got != want {
			t.Errorf("byteSize(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{0: "+0s", 850 * time.Microsecond: "+850µs", 1500 * time.Millisecond: "+1.5s", -time.Millisecond: "-1ms"} {
		if got := sinceStart(d); got != want {
			t.Errorf("sinceStart(%v) = %q, want %q", d, got, want)
		}
	}
}
