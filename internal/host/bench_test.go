package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// The benchmarks share the test suite (TestMain's host, hub and the compile
// cache in build/test-cache), so a JS component compiles once per checkout,
// not once per benchmark.

// reportPercentiles reports the p50 and p99 of ds as p50-ns and p99-ns.
func reportPercentiles(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	at := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))]) }
	b.ReportMetric(at(0.50), "p50-ns")
	b.ReportMetric(at(0.99), "p99-ns")
}

// BenchmarkAgentStart: starting a hello-sized JS agent (the probe, ~12 MB,
// with nothing to do) and running it to the end. baseline is the
// production path: the component comes from the compile cache (deserialize
// + link + instantiate + run); uncached compiles it from its bytes every
// time; warm reuses a loaded Program (instantiate + run only).
func BenchmarkAgentStart(b *testing.B) {
	s := env(b)
	path := filepath.Join(s.root, "build", "test-agents", "probe.wasm")
	bytes, err := os.ReadFile(path)
	if err != nil {
		b.Fatalf("%s: %v: run make agents", path, err)
	}
	input := `{"steps": []}`
	runOnce := func(b *testing.B, h *Host, p *Program) {
		out, err := h.Start(p, AgentConfig{Name: "start"}, input).Wait()
		if err != nil || out != "[]" {
			b.Fatalf("run = %q, %v", out, err)
		}
	}
	loadRun := func(b *testing.B, h *Host) {
		p, err := h.Load("probe", bytes)
		if err != nil {
			b.Fatal(err)
		}
		runOnce(b, h, p)
		p.Close()
	}
	b.Run("baseline", func(b *testing.B) {
		s.program(b, "test-agents", "probe") // the cache entry exists
		before := s.host.Cache().Stats().Hits
		for b.Loop() {
			loadRun(b, s.host)
		}
		if hits := s.host.Cache().Stats().Hits - before; hits != int64(b.N) {
			b.Fatalf("%d cache hits for %d loads", hits, b.N)
		}
	})
	b.Run("uncached", func(b *testing.B) {
		h, err := New(Options{Log: s.log}, s.hub)
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		for b.Loop() {
			loadRun(b, h)
		}
	})
	b.Run("warm", func(b *testing.B) {
		p := s.program(b, "test-agents", "probe")
		for b.Loop() {
			runOnce(b, s.host, p)
		}
	})
}

// echoArgs are the echo tool's arguments, as JSON text for every variant.
var echoArgs = json.RawMessage(`{"text":"ping"}`)

func directEcho(cs *mcp.ClientSession) error {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: echoArgs})
	if err == nil && res.IsError {
		err = fmt.Errorf("echo: %+v", res)
	}
	return err
}

// callGuests are the guests of the call benchmarks, by sub-benchmark name.
var callGuests = []struct {
	name string
	g    guest
}{{"guest", guestJS}, {"guest-go", guestGo}}

// benchAgent runs the bench agent of the toolchain whose build directory
// is dir (testdata/agents/bench.js, testdata/agents-go/bench) for n rounds
// and returns the guest's own timing of each round (performance.now(),
// time.Now()).
func benchAgent(b *testing.B, dir string, n, batch int) []time.Duration {
	b.Helper()
	s := env(b)
	p := s.program(b, dir, "bench")
	in := map[string]any{"tooling": "mem", "tool": "echo", "arguments": echoArgs, "n": n, "batch": batch}
	return runBenchAgent(b, s, p, AgentConfig{Name: "bench", Limits: AgentLimits{InboxCapacity: 4 * max(batch, 1)}}, in, n)
}

// runBenchAgent runs a bench agent (any guest) of p with input in and
// returns its own timing of each of its n rounds.
func runBenchAgent(b *testing.B, s *suite, p *Program, cfg AgentConfig, in map[string]any, n int) []time.Duration {
	b.Helper()
	text, _ := json.Marshal(in)
	out, err := s.host.Start(p, cfg, string(text)).Wait()
	if err != nil {
		b.Fatalf("bench agent: %v", err)
	}
	var res struct {
		NS     []int64 `json:"ns"`
		Errors int     `json:"errors"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Errors != 0 || len(res.NS) != n {
		b.Fatalf("bench agent said %.200q (%v)", out, err)
	}
	return durations(res.NS)
}

// durations are nanosecond counts as durations.
func durations(ns []int64) []time.Duration {
	ds := make([]time.Duration, len(ns))
	for i, n := range ns {
		ds[i] = time.Duration(n)
	}
	return ds
}

// BenchmarkGuestCallEcho: one echo call on the in-process go-sdk server.
// baseline is go-sdk's ClientSession.CallTool from Go; pump is the same
// call through the host's layers below WebAssembly (contract.Handle, the mcp
// tooling); pump-locked is pump from a thread-locked goroutine; guest is a
// JS guest's call-tool-blocking, timed inside the guest with
// performance.now(), guest-go a Go guest's (sdk/go), timed with time.Now()
// (ns/op also counts the agent's start, amortized over b.N calls).
func BenchmarkGuestCallEcho(b *testing.B) {
	s := env(b)
	b.Run("baseline", func(b *testing.B) {
		cs := testenv.DirectSession(b, s.mem.Server, mcpclient.DefaultProtocolVersion)
		ds := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			if err := directEcho(cs); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
		reportPercentiles(b, ds)
	})
	pumpVariants(b, s, "echo", 16, func(b *testing.B, h *contract.Handle, _ *inbox.Inbox) []time.Duration {
		args := string(echoArgs)
		ds := make([]time.Duration, 0, b.N)
		for range b.N {
			start := time.Now()
			if _, err := h.CallToolBlocking(context.Background(), "echo", args); err != nil {
				b.Error(err)
				break
			}
			ds = append(ds, time.Since(start))
		}
		return ds
	})
	for _, g := range callGuests {
		b.Run(g.name, func(b *testing.B) {
			// One agent makes all b.N calls.
			s.program(b, g.g.dir(), "bench")
			b.ResetTimer()
			reportPercentiles(b, benchAgent(b, g.g.dir(), b.N, 0))
		})
	}
}

// BenchmarkGuestFanout100: 100 echo calls in flight at once, per op.
// baseline is 100 goroutines calling go-sdk's CallTool; pump is one
// goroutine's 100 contract.Handle.CallTool calls followed by inbox Recv until
// all 100 results are in (the host's layers below WebAssembly),
// pump-locked the same on a goroutine locked to its OS thread, as a guest
// runs; guest is a JS guest's 100 call-tool calls followed by recv,
// guest-go the same from a Go guest.
func BenchmarkGuestFanout100(b *testing.B) {
	s := env(b)
	const fan = 100
	b.Run("baseline", func(b *testing.B) {
		cs := testenv.DirectSession(b, s.mem.Server, mcpclient.DefaultProtocolVersion)
		ds := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			var wg sync.WaitGroup
			for range fan {
				wg.Go(func() {
					if err := directEcho(cs); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
			ds = append(ds, time.Since(start))
		}
		reportPercentiles(b, ds)
	})
	pumpVariants(b, s, "fan", 4*fan, func(b *testing.B, h *contract.Handle, in *inbox.Inbox) []time.Duration {
		return pumpFanout(b, h, in, fan)
	})
	for _, g := range callGuests {
		b.Run(g.name, func(b *testing.B) {
			s.program(b, g.g.dir(), "bench")
			b.ResetTimer()
			reportPercentiles(b, benchAgent(b, g.g.dir(), b.N, fan))
		})
	}
}

// pumpFanout makes b.N rounds of fan calls of echo on h, each followed by
// Recv on in until all their results are in, and returns each round's time.
// pumpVariants runs body as the variants pump and pump-locked: with a
// fresh hub agent's handle on "mem" and its inbox, from a goroutine that
// pump-locked locks to its OS thread, as a host function runs (a cgo
// callback on the agent's thread: its wake-up after a result costs a thread
// hand-off). body reports each op's duration.
func pumpVariants(b *testing.B, s *suite, name string, capacity int, body func(b *testing.B, h *contract.Handle, in *inbox.Inbox) []time.Duration) {
	for _, locked := range []bool{false, true} {
		variant := "pump"
		if locked {
			variant = "pump-locked"
		}
		b.Run(variant, func(b *testing.B) {
			a := contract.NewAgent(s.hub, "bench-"+name+"-"+variant, inbox.New(capacity), contract.Options{})
			defer a.Close()
			h, err := a.Get("mem")
			if err != nil {
				b.Fatal(err)
			}
			done := make(chan []time.Duration)
			go func() {
				if locked {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
				}
				done <- body(b, h, a.Inbox())
			}()
			reportPercentiles(b, <-done)
		})
	}
}

func pumpFanout(b *testing.B, h *contract.Handle, in *inbox.Inbox, fan int) []time.Duration {
	ds := make([]time.Duration, 0, b.N)
	args := string(echoArgs)
	for range b.N {
		start := time.Now()
		for range fan {
			if _, err := h.CallTool("echo", args); err != nil {
				b.Error(err)
				return ds
			}
		}
		for range fan {
			e, ok := in.Recv(context.Background(), nil)
			if !ok {
				b.Error("inbox closed")
				return ds
			}
			if _, ok := e.Event.(inbox.ToolResult); !ok {
				b.Errorf("event %+v", e.Event)
				return ds
			}
		}
		ds = append(ds, time.Since(start))
	}
	return ds
}
