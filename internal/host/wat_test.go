package host

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/engine"
	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// Small components in the component text format exercise the host's edges
// without a JS toolchain.

// runComponent wraps a core module body in a component exporting
// run: func(input: string) -> result<string, string>. The module has a
// memory, a bump realloc, and helpers: $ok and $err return (from run) the
// string at (ptr, len); run's return area is at address 0.
func runComponent(imports, lowered, moduleImports, body string) string {
	return fmt.Sprintf(`(component
  %s
  %s
  (core module $m
    %s
    (memory (export "mem") 1)
    (global $heap (mut i32) (i32.const 1024))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (local $p i32)
      (local.set $p (global.get $heap))
      (global.set $heap (i32.add (global.get $heap) (local.get 3)))
      (local.get $p))
    (func $result (param $disc i32) (param $ptr i32) (param $len i32) (result i32)
      (i32.store8 (i32.const 0) (local.get $disc))
      (i32.store (i32.const 4) (local.get $ptr))
      (i32.store (i32.const 8) (local.get $len))
      (i32.const 0))
    (func $ok (param i32 i32) (result i32) (call $result (i32.const 0) (local.get 0) (local.get 1)))
    (func $err (param i32 i32) (result i32) (call $result (i32.const 1) (local.get 0) (local.get 1)))
    (data (i32.const 16) "grew")
    (data (i32.const 32) "grow failed")
    (func $deeper unreachable)
    (func $deep (call $deeper))
    (func (export "run") (param $in i32) (param $len i32) (result i32)
      %s)
  )
  (core instance $i (instantiate $m%s))
  (func (export "run") (param "input" string) (result (result string (error string)))
    (canon lift (core func $i "run") (memory $i "mem") (realloc (func $i "realloc"))))
)`, imports, lowered, moduleImports, body, withImports(moduleImports))
}

func withImports(moduleImports string) string {
	if moduleImports == "" {
		return ""
	}
	return ` (with "x" (instance (export "nope" (func $nope_low))))`
}

// Components used below.
var (
	watTrap = runComponent("", "", "", `(call $deep) (i32.const 0)`)
	watSpin = runComponent("", "", "", `(loop $l (br $l)) (i32.const 0)`)
	watGrow = runComponent("", "", "", `
      (if (result i32) (i32.eq (memory.grow (i32.const 16)) (i32.const -1))
        (then (call $err (i32.const 32) (i32.const 11)))
        (else (call $ok (i32.const 16) (i32.const 4))))`)
	// watEcho returns its input.
	watEcho = runComponent("", "", "", `(call $ok (local.get $in) (local.get $len))`)
	// watUnprovided imports an interface the host does not provide and
	// calls it only when the input is not empty.
	watUnprovided = runComponent(
		`(import "example:nope/thing@1.0.0" (instance $nope (export "nope" (func (param "x" u32)))))`,
		`(alias export $nope "nope" (func $nope_f))
  (core func $nope_low (canon lower (func $nope_f)))`,
		`(import "x" "nope" (func $nope (param i32)))`,
		`(if (result i32) (i32.eqz (local.get $len))
        (then (call $ok (i32.const 16) (i32.const 4)))
        (else (call $nope (i32.const 7)) (call $ok (i32.const 16) (i32.const 4))))`)
	watNoRun = `(component
  (core module $m (func (export "walk")))
  (core instance $i (instantiate $m))
  (func (export "walk") (canon lift (core func $i "walk")))
)`
	watWrongRun = `(component
  (core module $m (func (export "run") (param i32) (result i32) (local.get 0)))
  (core instance $i (instantiate $m))
  (func (export "run") (param "n" u32) (result u32) (canon lift (core func $i "run")))
)`
)

func load(t testing.TB, h *Host, name, wat string) *Program {
	t.Helper()
	p, err := h.Load(name, []byte(wat))
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func waitAgent(t testing.TB, a *Agent, within time.Duration) (string, error) {
	t.Helper()
	select {
	case <-a.Done():
	case <-time.After(within):
		a.Stop()
		t.Fatalf("agent %s did not end within %v", a.Name(), within)
	}
	return a.Wait()
}

func TestWATRun(t *testing.T) {
	s := env(t)
	cases := []struct {
		name    string
		wat     string
		cfg     AgentConfig
		input   string
		wantOut string
		wantErr func(t *testing.T, err error)
	}{
		{name: "echo", wat: watEcho, input: "héllo", wantOut: "héllo"},
		{name: "grow unlimited", wat: watGrow, wantOut: "grew"},
		{name: "grow within the limit", wat: watGrow, cfg: AgentConfig{Limits: AgentLimits{MemoryLimit: 2 << 20}}, wantOut: "grew"},
		{name: "grow past the limit", wat: watGrow, cfg: AgentConfig{Limits: AgentLimits{MemoryLimit: 512 << 10}}, wantErr: func(t *testing.T, err error) {
			var re *RunError
			if !errors.As(err, &re) || re.Message != "grow failed" {
				t.Fatalf("err = %v (%T), want RunError \"grow failed\"", err, err)
			}
		}},
		{name: "trap", wat: watTrap, wantErr: func(t *testing.T, err error) {
			var tr *wt.Trap
			if !errors.As(err, &tr) {
				t.Fatalf("err = %v (%T), want a *wasmtime.Trap", err, err)
			}
			if tr.Code != wt.TrapUnreachableCodeReached || len(tr.Backtrace) < 3 {
				t.Fatalf("trap %v with backtrace %v: want unreachable with the guest frames", tr.Code, tr.Backtrace)
			}
			if !strings.Contains(err.Error(), "unreachable") {
				t.Errorf("message %q does not say what trapped", err)
			}
		}},
		{name: "unprovided import mentioned", wat: watUnprovided, input: "", wantOut: "grew"},
		{name: "unprovided import called", wat: watUnprovided, input: "call it", wantErr: func(t *testing.T, err error) {
			if !errors.Is(err, ErrUnprovidedImport) || !strings.Contains(err.Error(), "example:nope/thing@1.0.0") {
				t.Fatalf("err = %v, want ErrUnprovidedImport naming example:nope/thing@1.0.0", err)
			}
			var tr *wt.Trap
			if !errors.As(err, &tr) || len(tr.Backtrace) == 0 {
				t.Errorf("err %v has no guest backtrace", err)
			}
		}},
		{name: "run timeout", wat: watSpin, cfg: AgentConfig{Limits: AgentLimits{RunTimeout: 50 * time.Millisecond}}, wantErr: func(t *testing.T, err error) {
			if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "run timeout") {
				t.Fatalf("err = %v, want ErrInterrupted for the run timeout", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := load(t, s.host, tc.name, tc.wat)
			cfg := tc.cfg
			cfg.Name = "wat"
			out, err := waitAgent(t, s.host.Start(p, cfg, tc.input), 20*time.Second)
			if tc.wantErr != nil {
				tc.wantErr(t, err)
				return
			}
			if err != nil || out != tc.wantOut {
				t.Fatalf("run = %q, %v; want %q", out, err, tc.wantOut)
			}
		})
	}
}

func TestWATRefused(t *testing.T) {
	s := env(t)
	for _, tc := range []struct {
		name, wat, want string
	}{
		{"missing run", watNoRun, "no export `run"},
		{"wrong run type", watWrongRun, "export `run` has type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := s.host.Load(tc.name, []byte(tc.wat))
			if err == nil {
				p.Close()
				t.Fatal("loaded")
			}
			if !errors.Is(err, ErrBadComponent) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "result<string, string>") {
				t.Fatalf("err = %v, want ErrBadComponent saying %q and the expected type", err, tc.want)
			}
		})
	}
	if _, err := s.host.Load("garbage", []byte("not a component")); err == nil {
		t.Fatal("garbage loaded")
	}
}

// TestTrapEndsOnlyThatAgent: a probe agent in the middle of a call keeps
// going while another agent traps.
func TestTrapEndsOnlyThatAgent(t *testing.T) {
	s := env(t)
	probe := s.startProbe(t, probeOpts{name: "bystander"},
		step{"op": "get", "name": "mem", "as": "t"},
		step{"op": "call-tool-blocking", "h": "t", "tool": "gate", "args": map[string]any{"tag": "bystander"}},
		step{"op": "call-tool-blocking", "h": "t", "tool": "echo", "args": map[string]any{"text": "still fine"}},
	)
	s.mem.AwaitGate(t, "bystander")
	trapper := load(t, s.host, "trap", watTrap)
	for i := range 3 {
		_, err := waitAgent(t, s.host.Start(trapper, AgentConfig{Name: fmt.Sprint("trapper-", i)}, ""), 20*time.Second)
		var tr *wt.Trap
		if !errors.As(err, &tr) || tr.Code != wt.TrapUnreachableCodeReached {
			t.Fatalf("err = %v, want an unreachable trap", err)
		}
	}
	s.mem.OpenGate("bystander")
	rs := finish(t, probe)
	checkSteps(t, rs, `"t"`, "*", "*")
	if text, _ := valueText(okAs[struct{ Value string }](t, rs[2]).Value); text != "still fine" {
		t.Fatalf("bystander's echo: %q", text)
	}
}

// TestStopSpinningGuest: a guest in an endless loop gets its shutdown
// envelope, ignores it, and is interrupted after the grace.
func TestStopSpinningGuest(t *testing.T) {
	s := env(t)
	p := load(t, s.host, "spin", watSpin)
	for _, grace := range []time.Duration{0, 100 * time.Millisecond} {
		t.Run(fmt.Sprint("grace=", grace), func(t *testing.T) {
			a := s.host.Start(p, AgentConfig{Name: "spinner", Limits: AgentLimits{StopGrace: grace}}, "")
			time.Sleep(50 * time.Millisecond) // let it spin
			select {
			case <-a.Done():
				t.Fatal("the spinning agent ended by itself")
			default:
			}
			start := time.Now()
			a.Stop()
			_, err := waitAgent(t, a, 10*time.Second)
			if !errors.Is(err, ErrInterrupted) {
				t.Fatalf("err = %v, want ErrInterrupted", err)
			}
			// (Stopped before its store existed, it has no trap to carry;
			// TestAgentEndReleasesEverything checks the trap of an agent
			// known to be running.)
			var tr *wt.Trap
			if errors.As(err, &tr) && (!wt.IsInterrupt(err) || len(tr.Backtrace) == 0) {
				t.Errorf("err %v does not carry the interrupt trap and its backtrace", err)
			}
			if d := time.Since(start); d < grace {
				t.Errorf("interrupted after %v, before the grace of %v", d, grace)
			}
		})
	}
	// Stopped before it could start: no run at all.
	a := s.host.Start(p, AgentConfig{Name: "stopped-early"}, "")
	a.Stop()
	if _, err := waitAgent(t, a, 10*time.Second); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
}

// TestFuel: on a host that meters fuel, an agent's Fuel bounds its work
// (a spinning guest traps out of fuel) and 0 leaves it unlimited.
func TestFuel(t *testing.T) {
	s := env(t)
	h, err := New(Options{Engine: engine.Options{Fuel: true}, Log: s.log}, s.hub)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	spin := load(t, h, "spin", watSpin)
	_, err = waitAgent(t, h.Start(spin, AgentConfig{Name: "fueled", Limits: AgentLimits{Fuel: 100_000}}, ""), 20*time.Second)
	var tr *wt.Trap
	if !errors.As(err, &tr) || tr.Code != wt.TrapOutOfFuel {
		t.Fatalf("err = %v, want an out-of-fuel trap", err)
	}
	grow := load(t, h, "grow", watGrow)
	if out, err := waitAgent(t, h.Start(grow, AgentConfig{Name: "unmetered"}, ""), 20*time.Second); err != nil || out != "grew" {
		t.Fatalf("Fuel 0 on a metering host: %q, %v; want unlimited", out, err)
	}
	if out, err := waitAgent(t, h.Start(grow, AgentConfig{Name: "metered", Limits: AgentLimits{Fuel: 1_000_000}}, ""), 20*time.Second); err != nil || out != "grew" {
		t.Fatalf("enough fuel: %q, %v", out, err)
	}
}

// TestStopAndWaitAreIdempotent: Stop after the end, Stop twice and Wait
// twice are harmless and Wait keeps its answer.
func TestStopAndWaitAreIdempotent(t *testing.T) {
	s := env(t)
	p := load(t, s.host, "echo", watEcho)
	a := s.host.Start(p, AgentConfig{Name: "idem"}, "once")
	out, err := waitAgent(t, a, 20*time.Second)
	if err != nil || out != "once" {
		t.Fatalf("run = %q, %v", out, err)
	}
	a.Stop()
	a.Stop()
	if out2, err2 := a.Wait(); out2 != out || err2 != nil {
		t.Fatalf("Wait after Stop = %q, %v; want the first answer", out2, err2)
	}
	if a.Name() != "idem" || a.Inbox() == nil {
		t.Fatalf("Name %q, Inbox %v", a.Name(), a.Inbox())
	}
}
