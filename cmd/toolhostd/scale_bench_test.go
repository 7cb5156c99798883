package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// BenchmarkServeIdleAgents: `toolhostd serve` with N idle agents of one
// component (the componentize-qjs probe waiting in recv; N from
// TOOLHOSTD_BENCH_AGENTS, make bench N=10000, default 100), from a warm
// compile cache. Per op, one serve from start to exit; reported:
//
//   - start-s: from exec until /v1/agents reports all N running (each
//     agent's run has been entered);
//   - pss-KB/agent: the process's PSS with the agents idle, less the PSS
//     of baseline (the same serve with no agents), per agent; on the
//     baseline row, that whole PSS;
//   - threads, maps: the process's OS threads and memory mappings with
//     the agents idle (vm.max_map_count bounds the second);
//   - agents-ms, ps-ms: /v1/agents through the control client, and the
//     `toolhostd ps` command, meanwhile (median of 5);
//   - stop-s: from SIGTERM until the process exited (exit 0).
func BenchmarkServeIdleAgents(b *testing.B) {
	n := 100
	if s := os.Getenv("TOOLHOSTD_BENCH_AGENTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n <= 0 {
			b.Fatalf("TOOLHOSTD_BENCH_AGENTS=%q: want a positive count", s)
		}
	}
	probe, err := testenv.AgentPath(testenv.Root(b), "test-agents-qjs", "probe")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	// Fill the compile cache once: the rows measure starts, not compiles.
	if out, err := asMain("compile", probe).CombinedOutput(); err != nil {
		b.Fatalf("compile: %v\n%s", err, out)
	}
	config := func(agents int) string {
		var s strings.Builder
		fmt.Fprintf(&s, "version = 1\n[host]\nlog_level = \"warn\"\ncontrol_socket = %q\nmax_threads = %d\n",
			filepath.Join(dir, "ctl.sock"), max(10000, agents+2000))
		for i := range agents {
			fmt.Fprintf(&s, "[agent.a%d]\ncomponent = %q\ninput = '%s'\n", i, probe, idleSteps)
		}
		return s.String()
	}
	var basePSS float64
	b.Run("baseline", func(b *testing.B) {
		for b.Loop() {
			m := serveIdle(b, dir, config(0), 0)
			basePSS = m["pss-KB"]
			reportServe(b, m, 1)
		}
	})
	b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
		for b.Loop() {
			m := serveIdle(b, dir, config(n), n)
			m["pss-KB"] -= basePSS
			reportServe(b, m, n)
		}
	})
}

func reportServe(b *testing.B, m map[string]float64, n int) {
	b.ReportMetric(m["start-s"], "start-s")
	b.ReportMetric(m["pss-KB"]/float64(n), "pss-KB/agent")
	b.ReportMetric(m["threads"], "threads")
	b.ReportMetric(m["maps"], "maps")
	b.ReportMetric(m["agents-ms"], "agents-ms")
	b.ReportMetric(m["ps-ms"], "ps-ms")
	b.ReportMetric(m["stop-s"], "stop-s")
	b.ReportMetric(0, "ns/op")
}

// idleSteps make the probe log startedLine, then wait in recv until its
// shutdown envelope.
const (
	startedLine = "probe-started"
	idleSteps   = `{"steps": [{"op": "log", "level": "warn", "message": "` + startedLine + `"}, {"op": "recv"}]}`
)

// serveIdle runs one serve of cfg until its n agents run, measures it, and
// stops it.
func serveIdle(b *testing.B, dir, cfg string, n int) map[string]float64 {
	path := filepath.Join(dir, "toolhostd.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	sock := filepath.Join(dir, "ctl.sock")
	m := map[string]float64{}
	start := time.Now()
	srv := startServe(b, path)
	// Started: every agent's own first log line is out, and the control
	// API reports it running.
	var c *control.Client
	started, scanned := 0, 0
	for {
		select {
		case <-srv.exited:
			b.Fatalf("serve exited: %v\n%s", srv.err, srv.out.String())
		case <-time.After(10 * time.Millisecond):
		}
		k, next := srv.out.count(startedLine, scanned)
		started, scanned = started+k, next
		if started < n {
			continue
		}
		if c == nil {
			var err error
			if c, err = control.Dial(sock); err != nil {
				continue
			}
		}
		as, err := c.Agents(context.Background())
		if err != nil {
			continue
		}
		running := 0
		for _, a := range as {
			if a.State == "running" {
				running++
			}
		}
		if running == n {
			break
		}
	}
	m["start-s"] = time.Since(start).Seconds()
	time.Sleep(time.Second) // the last agents go on from log.write to recv
	pid := srv.cmd.Process.Pid
	m["pss-KB"] = procField(b, fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:")
	m["threads"] = procField(b, fmt.Sprintf("/proc/%d/status", pid), "Threads:")
	if maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid)); err == nil {
		m["maps"] = float64(strings.Count(string(maps), "\n"))
	}
	var agents, ps []float64
	for range 5 {
		t0 := time.Now()
		if _, err := c.Agents(context.Background()); err != nil {
			b.Fatal(err)
		}
		agents = append(agents, float64(time.Since(t0).Microseconds())/1000)
		t0 = time.Now()
		if out, err := asMain("ps", "--socket", sock).CombinedOutput(); err != nil {
			b.Fatalf("ps: %v\n%s", err, out)
		}
		ps = append(ps, float64(time.Since(t0).Microseconds())/1000)
	}
	m["agents-ms"], m["ps-ms"] = medianOf(agents), medianOf(ps)
	t0 := time.Now()
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		b.Fatal(err)
	}
	select {
	case <-srv.exited:
	case <-time.After(60 * time.Second):
		b.Fatalf("serve did not exit within 60 s of SIGTERM\n%s", srv.out.String())
	}
	m["stop-s"] = time.Since(t0).Seconds()
	if srv.err != nil {
		b.Fatalf("serve exited with %v\n%s", srv.err, srv.out.String())
	}
	return m
}

// asMain is a command running this test binary as toolhostd.
func asMain(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), envAsMain+"=1")
	return cmd
}

// procField reads the number after name in a /proc file.
func procField(b *testing.B, path, name string) float64 {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Skipf("no %s: %v", path, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == name {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				b.Fatalf("%s: %q", path, line)
			}
			return v
		}
	}
	b.Fatalf("%s has no %s", path, name)
	return 0
}

func medianOf(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
