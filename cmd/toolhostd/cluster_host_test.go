package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// clusterHost is one `toolhostd serve` process of a cluster test.
type clusterHost struct {
	name string
	proc *serveProc
	ctl  *control.Client
}

// startClusterHost starts `toolhostd serve` as the cluster member name
// (lease_ttl ttl, settle 1s, etcd at endpoints), its control socket in
// dir (short: a socket path is bounded), the tests' compile cache, and
// rest (agents, toolings) after its [host] and [cluster] tables; it
// returns once the control socket answers.
func startClusterHost(t *testing.T, dir, name string, ttl time.Duration, endpoints []string, rest string) *clusterHost {
	return startClusterHostToken(t, dir, name, ttl, endpoints, "", rest)
}

// startClusterHostToken is startClusterHost with, when token is set, the
// control API also on a TCP port of loopback with that control_token,
// which the hosts forward messages to each other over; ctl is then a
// client of it.
func startClusterHostToken(t *testing.T, dir, name string, ttl time.Duration, endpoints []string, token, rest string) *clusterHost {
	t.Helper()
	cache := filepath.Join(testenv.Root(t), "build", "test-cache")
	eps, _ := json.Marshal(endpoints)
	sock := filepath.Join(dir, name+".sock")
	tcp, addr := "", ""
	if token != "" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr = l.Addr().String()
		l.Close()
		tcp = fmt.Sprintf("control_listen = %q\ncontrol_token = %q\n", addr, token)
	}
	cfg := fmt.Sprintf("version = 1\n[host]\ncontrol_socket = %q\ncache_dir = %q\n%s\n[cluster]\nname = %q\nlease_ttl = \"%s\"\nsettle = \"1s\"\nmoves_per_second = 100\netcd = { endpoints = %s }\n\n%s",
		sock, cache, tcp, name, ttl, eps, rest)
	path := writeConfigFile(t, dir, name+".toml", cfg)
	p := startServe(t, path)
	var c *control.Client
	waitFor(t, 60*time.Second, func() bool {
		var err error
		if token != "" {
			c, err = control.DialTCP(addr, token)
			return err == nil
		}
		if _, err := os.Stat(sock); err != nil {
			return false
		}
		c, err = control.Dial(sock)
		return err == nil
	}, p.out)
	t.Cleanup(func() { _ = c.Close() })
	return &clusterHost{name: name, proc: p, ctl: c}
}

// shortTempDir is a new directory under the system's temporary one (not
// t.TempDir: a socket's path must stay short), removed when the test ends.
func shortTempDir(t *testing.T, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
