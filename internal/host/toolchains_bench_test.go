package host

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// BenchmarkGuestToolchains compares the guest toolchains on the same
// agents (the contract probe and the bench agent, built with
// componentize-js, with Go and sdk/go, and with componentize-qjs): ns/op
// is a warm start (instantiate a loaded Program and run it with nothing to
// do); size-bytes is the probe component's size; compile-ns one cold
// compile and link of it (no compile cache); idle-pss-bytes the growth of
// the process's proportional set size per agent, with pssProbes probes
// started and waiting in recv; call-p50-ns the median of a guest's
// call-tool-blocking of the in-process echo tool, timed inside the guest.
// The README's guest toolchain table comes from `make bench`'s medians of
// these.
func BenchmarkGuestToolchains(b *testing.B) {
	s := env(b)
	for _, g := range currentGuests {
		b.Run(g.String(), func(b *testing.B) {
			path := testenv.Agent(b, g.dir(), "probe")
			component, err := os.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			compile := coldCompile(b, s, component)
			p := s.program(b, g.dir(), "probe")
			idle := idlePSS(b, s, p)
			ds := guestBench(b, s, g, 200)
			slices.Sort(ds)

			for b.Loop() {
				out, err := s.host.Start(p, AgentConfig{Name: "start"}, `{"steps": []}`).Wait()
				if err != nil || out != "[]" {
					b.Fatalf("run = %q, %v", out, err)
				}
			}
			// After the loop: b.Loop's timer reset drops metrics reported
			// before it.
			b.ReportMetric(float64(len(component)), "size-bytes")
			b.ReportMetric(float64(compile), "compile-ns")
			b.ReportMetric(idle, "idle-pss-bytes")
			b.ReportMetric(float64(ds[len(ds)/2]), "call-p50-ns")
		})
	}
}

// coldCompile loads component on a host without a compile cache.
func coldCompile(b *testing.B, s *suite, component []byte) time.Duration {
	b.Helper()
	h, err := New(Options{Log: s.log}, s.hub)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	start := time.Now()
	p, err := h.Load("cold", component)
	d := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	p.Close()
	return d
}

const pssProbes = 8

// idlePSS starts pssProbes agents of p that wait in recv and returns the
// growth of the process's PSS per agent.
func idlePSS(b *testing.B, s *suite, p *Program) float64 {
	b.Helper()
	settle := func() int64 {
		runtime.GC()
		debug.FreeOSMemory()
		time.Sleep(100 * time.Millisecond)
		return pss(b)
	}
	before := settle()
	var started sync.WaitGroup
	started.Add(pssProbes)
	agents := make([]*Agent, pssProbes)
	for i := range agents {
		agents[i] = s.host.Start(p, AgentConfig{Name: "idle", OnStarted: func(time.Duration) { started.Done() }, Limits: AgentLimits{StopGrace: 10 * time.Second}}, `{"steps": [{"op": "recv"}]}`)
	}
	started.Wait()
	time.Sleep(300 * time.Millisecond) // into their recv
	after := settle()
	for _, a := range agents {
		a.Stop()
	}
	for _, a := range agents {
		if _, err := a.Wait(); err != nil {
			b.Fatalf("idle agent: %v", err)
		}
	}
	return float64(after-before) / pssProbes
}

// pss is the process's proportional set size in bytes (Linux).
func pss(b *testing.B) int64 {
	b.Helper()
	raw, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		b.Fatalf("PSS: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) >= 2 && string(f[0]) == "Pss:" {
			kb, err := strconv.ParseInt(string(f[1]), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no Pss line in /proc/self/smaps_rollup")
	return 0
}

// guestBench runs guest g's bench agent for n call-tool-blocking rounds of
// the in-process echo and returns the guest's timing of each.
func guestBench(b *testing.B, s *suite, g guest, n int) []time.Duration {
	b.Helper()
	p := s.program(b, g.dir(), "bench")
	in := map[string]any{"tooling": "mem", "tool": "echo", "arguments": echoArgs, "n": n}
	return runBenchAgent(b, s, p, AgentConfig{Name: "bench"}, in, n)
}
