package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/control"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

func TestServeConfigError(t *testing.T) {
	noConfig(t)
	dir := t.TempDir()
	p := writeConfigFile(t, dir, "bad.toml", "version = 1\n[agent.a]\ncomponent = 42\n")
	code, _, stderr := runCLI(t, "--config", p, "serve")
	if code != exitUsage || !strings.Contains(stderr, "agent.a.component") {
		t.Errorf("serve with a bad config: exit %d, stderr %q", code, stderr)
	}
	if code, _, _ := runCLI(t, "--config", p, "serve", "extra"); code != exitUsage {
		t.Errorf("serve with an argument: exit %d", code)
	}
}

// notifyListener is a unixgram socket standing in for systemd's.
func notifyListener(t *testing.T, dir string) (*net.UnixConn, string) {
	t.Helper()
	path := filepath.Join(dir, "notify.sock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, path
}

// expectNotify reads sd_notify datagrams, skipping watchdog pings, until
// one starts with want.
func expectNotify(t *testing.T, c *net.UnixConn, want string, log *syncBuffer) {
	t.Helper()
	buf := make([]byte, 4096)
	deadline := time.Now().Add(60 * time.Second)
	for {
		c.SetReadDeadline(deadline)
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("no %q from toolhostd: %v\n%s", want, err, log.String())
		}
		if msg := string(buf[:n]); strings.HasPrefix(msg, want) {
			return
		} else if msg != "WATCHDOG=1" {
			t.Fatalf("sd_notify %q while waiting for %q\n%s", msg, want, log.String())
		}
	}
}

// TestServe runs `toolhostd serve` in a subprocess as systemd would (a
// notify socket, a watchdog), drives it through the control socket and
// signals: READY=1, agents and toolings reported, SIGHUP and the API's
// reload apply a config (a bad one is refused, the error says why and the
// daemon keeps running), SIGTERM stops it with exit 0, STOPPING=1, no
// server process left and the socket removed.
func TestServe(t *testing.T) {
	root := testenv.Root(t)
	abs := func(name string) string {
		p, err := filepath.Abs(testdata(name))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	spin, traps, echo := abs("spin.wat"), abs("traps.wat"), abs("echo.wat")
	noConfig(t)
	dir := t.TempDir()
	notify, notifyPath := notifyListener(t, dir)
	sock := filepath.Join(dir, "ctl.sock")
	base := fmt.Sprintf(`version = 1
[host]
control_socket = %q

[tooling.everything]
command = "node"
args = [%q, "stdio"]

[agent.spinner]
component = %q
toolings = ["everything"]
stop_grace = "500ms"

[agent.crasher]
component = %q
restart_backoff = { initial = "50ms", max = "200ms" }
`, sock, filepath.Join(root, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"), spin, traps)
	cfgPath := writeConfigFile(t, dir, "toolhostd.toml", base)

	srv := startServe(t, cfgPath, "NOTIFY_SOCKET="+notifyPath, "WATCHDOG_USEC=2000000")
	cmd, stderr := srv.cmd, srv.out

	expectNotify(t, notify, "READY=1", stderr)
	c, err := control.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	agents := func() map[string]control.AgentStatus {
		t.Helper()
		list, err := c.Agents(ctx)
		if err != nil {
			t.Fatalf("agents: %v\n%s", err, stderr.String())
		}
		m := map[string]control.AgentStatus{}
		for _, a := range list {
			m[a.Name] = a
		}
		return m
	}
	waitFor(t, 60*time.Second, func() bool {
		a := agents()
		return a["spinner"].State == "running" && a["crasher"].Restarts >= 2 && a["crasher"].Traps >= 2
	}, stderr)
	waitFor(t, 60*time.Second, func() bool {
		ts, err := c.Toolings(ctx)
		return err == nil && len(ts) == 1 && ts[0].State == "connected" && ts[0].Tools > 0
	}, stderr)
	spinner := agents()["spinner"]
	servers := children(cmd.Process.Pid)
	if len(servers) == 0 {
		t.Fatalf("no server process under toolhostd\n%s", stderr.String())
	}

	// SIGHUP with an added agent.
	writeConfigFile(t, dir, "toolhostd.toml", base+fmt.Sprintf("\n[agent.late]\ncomponent = %q\nrestart = \"never\"\n", echo))
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	expectNotify(t, notify, "RELOADING=1", stderr)
	expectNotify(t, notify, "READY=1", stderr)
	waitFor(t, 30*time.Second, func() bool { return agents()["late"].State == "exited" }, stderr)
	if a := agents()["spinner"]; !a.Since.Equal(spinner.Since) || a.Restarts != 0 {
		t.Errorf("the reload touched the unchanged spinner: %+v", a)
	}

	// SIGHUP with a broken config: refused, logged, still serving.
	writeConfigFile(t, dir, "toolhostd.toml", base+"\n[agent.broken]\n")
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(stderr.String(), "reload failed") }, stderr)
	if a := agents(); len(a) != 3 || a["spinner"].State != "running" {
		t.Errorf("after a refused reload: %+v", a)
	}
	// The control API's reload says why.
	if err := c.Reload(ctx); err == nil || !strings.Contains(err.Error(), "agent.broken.component") {
		t.Errorf("reload through the control API with a broken config: %v", err)
	}
	// And applies a good one: late goes.
	writeConfigFile(t, dir, "toolhostd.toml", base)
	if err := c.Reload(ctx); err != nil {
		t.Fatalf("reload through the control API: %v", err)
	}
	expectNotify(t, notify, "RELOADING=1", stderr)
	expectNotify(t, notify, "READY=1", stderr)
	if a := agents(); len(a) != 2 || a["spinner"].Restarts != 0 {
		t.Errorf("after the API reload: %+v", a)
	}

	// SIGTERM: STOPPING=1, exit 0, nothing left behind.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	expectNotify(t, notify, "STOPPING=1", stderr)
	if err := srv.wait(t, 30*time.Second); err != nil {
		t.Fatalf("toolhostd serve exited with %v\n%s", err, stderr.String())
	}
	for _, pid := range servers {
		waitFor(t, 5*time.Second, func() bool { return !alive(pid) }, stderr)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("the control socket is still there: %v", err)
	}
}

// TestServeStopDuringFirstCompile is `docker stop` a few seconds after
// `docker run` on a cold compile cache: SIGTERM while the agents (12 MB
// componentize-js components) are still compiling makes serve exit 0
// within the agents' stop grace, not once the compiles are done.
func TestServeStopDuringFirstCompile(t *testing.T) {
	noConfig(t)
	dir := t.TempDir()
	const grace = 2 * time.Second
	cfg := fmt.Sprintf("version = 1\n[host]\ncontrol_socket = %q\ncache_dir = %q\n", filepath.Join(dir, "ctl.sock"), filepath.Join(dir, "cache"))
	for _, name := range []string{"hello", "watch", "fanout"} {
		cfg += fmt.Sprintf("\n[agent.%s]\ncomponent = %q\nstop_grace = %q\n", name, testenv.Agent(t, "agents", name), grace)
	}
	srv := startServe(t, writeConfigFile(t, dir, "toolhostd.toml", cfg))
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(srv.out.String(), "compiling ") }, srv.out)
	// SIGTERM at once: the compile just logged is under way and takes
	// seconds.
	if strings.Count(srv.out.String(), "compiled ") == 3 {
		t.Fatal("every agent compiled before the SIGTERM: too fast a machine for this test")
	}
	start := time.Now()
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.wait(t, 30*time.Second); err != nil {
		t.Fatalf("toolhostd serve exited with %v after SIGTERM during its first compile\n%s", err, srv.out.String())
	}
	if took := time.Since(start); took > grace {
		t.Errorf("serve exited %v after SIGTERM, want within the stop grace of %v\n%s", took, grace, srv.out.String())
	}
	if strings.Count(srv.out.String(), "compiled ") == 3 {
		t.Errorf("serve waited for every compile before it exited\n%s", srv.out.String())
	}
}
