package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// Contract tests (see contract_sync_test.go) where the guests legitimately
// differ (uncaught exceptions, memory limits), and the Go guest's own
// checks.

// TestUncaughtExceptions: what an uncaught exception or panic does
// differs by toolchain, and each is reported. componentize-js cannot turn
// an exception other than a string into run's err (the err is a string):
// the guest aborts, which the host reports as a trap, and the JS message
// reaches the log through the guest's stderr. componentize-qjs makes a JS
// Error run's err, and aborts (a trap) on a thrown host-error. A Go panic
// (a nil dereference too) aborts: a trap whose guest backtrace has the
// panicking function, and the panic message with the goroutine's stack on
// stderr.
func TestUncaughtExceptions(t *testing.T) {
	forGuests(t, func(t *testing.T, g guest) {
		s := env(t)
		whats := []string{"host-error", "error"}
		if g.toolchain() == guestGo {
			whats = append(whats, "nil")
		}
		for _, what := range whats {
			t.Run(what, func(t *testing.T) {
				name := "uncaught-" + g.String() + "-" + what
				a := s.startProbe(t, probeOpts{guest: g, name: name}, step{"op": "throw", "what": what, "message": "boom"})
				_, err := waitAgent(t, a, 20*time.Second)
				var stderr []string
				for _, e := range s.logs.All() {
					if m := e.ContextMap(); m["agent"] == name && m["stream"] == "stderr" {
						stderr = append(stderr, e.Message)
					}
				}
				logged := strings.Join(stderr, "\n")
				if g.toolchain() == guestQJS && what == "error" {
					var re *RunError
					if !errors.As(err, &re) || re.Message != "boom" {
						t.Fatalf("err = %v (%T), want run's err \"boom\"", err, err)
					}
					return
				}
				var tr *wt.Trap
				if !errors.As(err, &tr) || len(tr.Backtrace) == 0 {
					t.Fatalf("err = %v (%T), want a trap with a backtrace", err, err)
				}
				switch g.toolchain() {
				case guestJS:
					if !strings.Contains(logged, "expected a string") {
						t.Errorf("the guest's stderr was not logged with its name: %q", stderr)
					}
				case guestGo:
					panicked := map[string]string{
						"host-error": `panic: not-found: no tooling named "no-such-tooling"`,
						"error":      "panic: boom",
						"nil":        "panic: runtime error: invalid memory address or nil pointer dereference",
					}[what]
					for _, want := range []string{panicked, "goroutine 1 [running]:", "main.(*probe).do("} {
						if !strings.Contains(logged, want) {
							t.Errorf("stderr lacks %q: %q", want, stderr)
						}
					}
					if !strings.Contains(tr.Error(), "main.__probe_.do") {
						t.Errorf("the trap's backtrace lacks the panicking function: %v", tr)
					}
				}
			})
		}
	})
}

// TestGoGCStress: a Go guest calls every import of the world in a loop
// with runtime.GC() between calls and megabytes allocated and dropped
// each round, checking every result (testdata/agents-go/probe/gcstress.go):
// what the host writes into guest memory survives until it is lifted, and
// the guest's own memory is not disturbed by the host.
func TestGoGCStress(t *testing.T) {
	s := env(t)
	const rounds = 12
	rs := s.probe(t, probeOpts{guest: guestGo, name: "gc-stress"},
		step{"op": "gc-stress", "name": "mem", "n": rounds, "mb": 2},
		step{"op": "pending"},
	)
	checkSteps(t, rs, fmt.Sprint(17*rounds), "0")
}

// TestJSMemoryLimit: a JS agent over its MemoryLimit gets a catchable
// "out of memory" (memory.grow fails), while an agent without a limit
// running alongside allocates the same amount.
func TestJSMemoryLimit(t *testing.T) {
	s := env(t)
	p := s.program(t, "test-agents", "probe")
	alloc := probeInput(t, []step{{"op": "alloc", "mb": 100}, {"op": "pending"}})
	limited := s.host.Start(p, AgentConfig{Name: "limited", Limits: AgentLimits{MemoryLimit: 48 << 20}}, alloc)
	free := s.host.Start(p, AgentConfig{Name: "unlimited"}, alloc)
	for _, tc := range []struct {
		a    *Agent
		want []string
	}{
		{limited, []string{"thrown out of memory", "0"}},
		{free, []string{"100", "0"}},
	} {
		out, err := waitAgent(t, tc.a, 30*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", tc.a.Name(), err)
		}
		var rs []stepResult
		if err := json.Unmarshal([]byte(out), &rs); err != nil {
			t.Fatal(err)
		}
		checkSteps(t, rs, tc.want...)
	}
}
