package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/control/controltest"
	"github.com/toolhostd/toolhostd/internal/status"
)

// runCLI runs `toolhostd ARGS...` in this process. Its output is kept
// in buffers safe for concurrent writes, as the files a command writes to
// are: a command's own output and its log lines (from the toolings'
// goroutines) may share stderr.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb syncBuffer
	code = execute(args, &out, &errb)
	return code, out.String(), errb.String()
}

// noConfig makes sure no config file is found unless a test passes one.
func noConfig(t *testing.T) {
	t.Helper()
	t.Setenv(config.EnvConfig, "")
	t.Chdir(t.TempDir())
}

// fieldsMatch compares a table row with want field by field (the column
// widths depend on the data); a "*" field matches any one field.
func fieldsMatch(got, want string) bool {
	g, w := strings.Fields(got), strings.Fields(want)
	if len(g) != len(w) {
		return false
	}
	for i := range w {
		if w[i] != "*" && w[i] != g[i] {
			return false
		}
	}
	return true
}

func TestControlCommands(t *testing.T) {
	noConfig(t)
	be := controltest.NewBackend()
	be.AddAgent(control.AgentStatus{Name: "multi", State: "failed", LastError: "trap: unreachable\nwasm backtrace:\n  0: f", Since: time.Now().Add(-90 * time.Minute)})
	be.AddAgent(control.AgentStatus{Name: "talk", State: "running", Since: time.Now().Add(-2 * time.Hour), Instances: []status.Instance{
		{Session: "alice", State: "running", Since: time.Now().Add(-3 * time.Minute), Messages: 4, LastActivity: time.Now().Add(-10 * time.Second)},
		{State: "stopping", Since: time.Now().Add(-time.Minute), Messages: 1, LastActivity: time.Now().Add(-30 * time.Second)},
	}, Oplog: &status.Oplog{Entries: 7, Bytes: 3500, Logs: 2}})
	be.AddAgent(control.AgentStatus{Name: "loop", State: "running", Oplog: &status.Oplog{Entries: 12, Bytes: 800}})
	sock := controltest.Serve(t, control.Options{Backend: be}).Socket()

	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   []string // lines, compared by fieldsMatch
		stderr   string   // substring
		jsonList func(t *testing.T, out string)
	}{
		{name: "ps", args: []string{"ps", "--socket", sock}, stdout: []string{
			"NAME   STATE    SINCE  RESTARTS  TRAPS  INBOX  OPLOG  LAST ERROR",
			"a      running  *      2         1      3      -",
			"b      stopped  *      0         0      0      -      exited with err: nope",
			"multi  failed   1h30m  0         0      0      -      trap: unreachable …",
			"talk   running  2h0m   0         0      0      7/3.4KiB(2)",
			"talk/alice  running  3m0s  -  -  -  -  messages=4  idle=10s",
			"talk/(one-off)  stopping  1m0s  -  -  -  -  messages=1  idle=30s",
			"loop   running  *      0         0      0      12/800B",
		}},
		{name: "ps json", args: []string{"ps", "--json", "--socket", sock}, jsonList: func(t *testing.T, out string) {
			var agents []control.AgentStatus
			if err := json.Unmarshal([]byte(out), &agents); err != nil {
				t.Fatalf("ps --json: %v\n%s", err, out)
			}
			if len(agents) != 5 || agents[0].Name != "a" || agents[0].Inbox != 3 || agents[2].LastError == "" {
				t.Errorf("ps --json = %+v", agents)
			}
		}},
		{name: "toolings", args: []string{"toolings", "--socket", sock}, stdout: []string{
			"NAME  STATE       TRANSPORT  SERVER                          TOOLS  IN-FLIGHT  RESTARTS  LAST ERROR",
			"fs    connected   stdio      secure-filesystem-server 0.2.0  14     1          0",
			"web   connecting  http       -                               0      0          5         connection refused",
		}},
		{name: "toolings json", args: []string{"toolings", "--json", "--socket", sock}, jsonList: func(t *testing.T, out string) {
			var list []control.ToolingStatus
			if err := json.Unmarshal([]byte(out), &list); err != nil {
				t.Fatalf("toolings --json: %v\n%s", err, out)
			}
			if len(list) != 2 || list[0].ServerVersion != "0.2.0" || list[1].Restarts != 5 {
				t.Errorf("toolings --json = %+v", list)
			}
		}},
		{name: "agent stop", args: []string{"agent", "stop", "a", "--socket", sock}, stdout: []string{"a: stopped"}},
		{name: "agent start", args: []string{"agent", "--socket", sock, "start", "a"}, stdout: []string{"a: running"}},
		{name: "agent restart", args: []string{"agent", "restart", "b", "--socket", sock}, stdout: []string{"b: running"}},
		{name: "agent unknown", args: []string{"agent", "restart", "zz", "--socket", sock}, code: exitFailure,
			stderr: "toolhostd: no such agent: \"zz\"\n"},
		{name: "agent no name", args: []string{"agent", "start", "--socket", sock}, code: exitUsage, stderr: "accepts 1 arg"},
		{name: "reload", args: []string{"reload", "--socket", sock}, stdout: []string{"reloaded"}},
		{name: "ps extra arg", args: []string{"ps", "x", "--socket", sock}, code: exitUsage, stderr: "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tt.code, errOut)
			}
			if tt.stderr != "" && !strings.Contains(errOut, tt.stderr) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tt.stderr)
			}
			if tt.jsonList != nil {
				tt.jsonList(t, out)
			}
			if tt.stdout != nil {
				lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
				if len(lines) != len(tt.stdout) {
					t.Fatalf("stdout:\n%s\nwant %d lines", out, len(tt.stdout))
				}
				for i, want := range tt.stdout {
					if !fieldsMatch(lines[i], want) {
						t.Errorf("line %d:\n got %q\nwant %q", i, lines[i], want)
					}
				}
			}
		})
	}
	want := []string{"stop a", "start a", "restart b", "reload"}
	if got := be.Actions(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("the daemon saw %q, want %q", got, want)
	}

	// A refused reload prints the daemon's reasons and exits 1.
	errs := config.Errors{
		{File: "/etc/toolhostd/toolhostd.toml", Line: 4, Col: 1, Key: "agent.x.component", Msg: "missing"},
		{File: "/etc/toolhostd/toolhostd.toml", Line: 9, Col: 1, Key: "host.log_level", Msg: `"loud" is not one of debug, info, warn, error`},
	}
	be.SetReloadError(errs)
	code, out, errOut := runCLI(t, "reload", "--socket", sock)
	wantErr := "toolhostd: reload refused (the running config stays):\n" + errs.Error() + "\n"
	if code != exitFailure || out != "" || errOut != wantErr {
		t.Errorf("refused reload: exit %d, stdout %q, stderr\n%s\nwant\n%s", code, out, errOut, wantErr)
	}
	be.SetReloadError(errors.New("boom"))
	if code, _, errOut := runCLI(t, "reload", "--socket", sock); code != exitFailure || !strings.HasSuffix(errOut, "\nboom\n") {
		t.Errorf("failed reload: exit %d, stderr %q", code, errOut)
	}
}

// TestControlSocketResolution: --socket, else the config's control_socket,
// else $RUNTIME_DIRECTORY/toolhostd.sock.
func TestControlSocketResolution(t *testing.T) {
	noConfig(t)
	be := controltest.NewBackend()
	dir := controltest.TempDir(t)

	// From the config.
	sock := filepath.Join(dir, "from-config.sock")
	controltest.Serve(t, control.Options{Backend: be, Socket: sock})
	cfg := filepath.Join(dir, "toolhostd.toml")
	if err := os.WriteFile(cfg, []byte("version = 1\n[host]\ncontrol_socket = \"from-config.sock\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, "--config", cfg, "ps"); code != 0 || !strings.HasPrefix(out, "NAME") {
		t.Errorf("ps with the config's socket: exit %d %q %q", code, out, errOut)
	}
	t.Setenv(config.EnvConfig, cfg)
	if code, _, errOut := runCLI(t, "toolings"); code != 0 {
		t.Errorf("toolings with $%s: exit %d %q", config.EnvConfig, code, errOut)
	}
	t.Setenv(config.EnvConfig, "")

	// The default: $RUNTIME_DIRECTORY.
	rd := controltest.TempDir(t)
	t.Setenv("RUNTIME_DIRECTORY", rd)
	controltest.Serve(t, control.Options{Backend: be}) // in its own dir: not found
	code, _, errOut := runCLI(t, "ps")
	want := "toolhostd: cannot reach toolhostd at " + filepath.Join(rd, "toolhostd.sock") + ": connect: no such file or directory; is it running?\n"
	if code != exitFailure || errOut != want {
		t.Errorf("ps with nothing listening: exit %d, stderr %q\nwant %q", code, errOut, want)
	}
	controltest.Serve(t, control.Options{Backend: be, Socket: filepath.Join(rd, "toolhostd.sock")})
	if code, out, errOut := runCLI(t, "agent", "stop", "b"); code != 0 || out != "b: stopped\n" {
		t.Errorf("agent stop on the default socket: exit %d %q %q", code, out, errOut)
	}

	// --socket wins over a config; a broken config is an error unless
	// --socket is given.
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("version = 1\n[host]\ncontrol_listen = \"x\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, "--config", bad, "ps")
	if code != exitUsage || !strings.Contains(errOut, "bad.toml:3:1: host.control_listen") || !strings.Contains(errOut, "pass --socket") {
		t.Errorf("ps with a broken config: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "--config", bad, "ps", "--socket", sock); code != 0 {
		t.Errorf("ps --socket with a broken config: exit %d %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "--config", filepath.Join(dir, "missing.toml"), "reload"); code != exitUsage || !strings.Contains(errOut, "does not exist") {
		t.Errorf("reload with a missing --config: exit %d %q", code, errOut)
	}
}

func TestAge(t *testing.T) {
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {1500 * time.Millisecond, "1s"}, {59 * time.Second, "59s"}, {61 * time.Second, "1m1s"},
		{3*time.Hour + 5*time.Minute, "3h5m"}, {47 * time.Hour, "47h0m"}, {50 * time.Hour, "2d2h"}, {-time.Second, "0s"},
	} {
		if got := age(now.Add(-tt.d), now); got != tt.want {
			t.Errorf("age(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	if got := age(time.Time{}, now); got != "-" {
		t.Errorf("age(zero) = %q", got)
	}
}
