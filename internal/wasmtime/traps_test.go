package wasmtime

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const trapWAT = `(component
  (import "fail" (func $fail (param "how" u32)))
  (core func $fail_low (canon lower (func $fail)))
  (core module $m
    (import "h" "fail" (func $fail (param i32)))
    (memory (export "mem") 1)
    (func $boom (export "boom") unreachable)
    (func (export "deep") (call $boom))
    (func (export "spin") (loop $l (br $l)))
    (func (export "grow") (param i32) (result i32) (memory.grow (local.get 0)))
    (func (export "fail") (param i32) (call $fail (local.get 0)))
  )
  (core instance $i (instantiate $m (with "h" (instance (export "fail" (func $fail_low))))))
  (func (export "boom") (canon lift (core func $i "boom")))
  (func (export "deep") (canon lift (core func $i "deep")))
  (func (export "spin") (canon lift (core func $i "spin")))
  (func (export "grow") (param "pages" u32) (result s32) (canon lift (core func $i "grow")))
  (func (export "fail") (param "how" u32) (canon lift (core func $i "fail")))
)`

var errHost = errors.New("host says no")

type trapEnv struct {
	e *Engine
	c *Component
	l *Linker
}

func newTrapEnv(t *testing.T, cfg EngineConfig) *trapEnv {
	t.Helper()
	e := mustEngine(t, cfg)
	c := mustComponent(t, e, trapWAT)
	l := mustLinker(t, e)
	if err := l.Root().AddFunc("fail", func(c *Caller, args, _ []Val) error {
		switch args[0].(U32) {
		case 1:
			return errHost
		case 2:
			panic("boom in host")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return &trapEnv{e, c, l}
}

func (te *trapEnv) instance(t *testing.T, cfg StoreConfig) (*Store, *Instance) {
	t.Helper()
	s := mustStore(t, te.e, cfg)
	inst, err := te.l.Instantiate(s, te.c)
	if err != nil {
		t.Fatal(err)
	}
	return s, inst
}

func call(t *testing.T, inst *Instance, name string, args ...Val) (Val, error) {
	t.Helper()
	f, err := inst.Func(name)
	if err != nil {
		t.Fatal(err)
	}
	return f.Call(args...)
}

func asTrap(t *testing.T, err error, code TrapCode) *Trap {
	t.Helper()
	var tr *Trap
	if !errors.As(err, &tr) {
		t.Fatalf("err = %v (%T), want *Trap", err, err)
	}
	if tr.Code != code {
		t.Fatalf("trap code %v, want %v (message %q)", tr.Code, code, tr.Message)
	}
	return tr
}

func TestTrapUnreachable(t *testing.T) {
	te := newTrapEnv(t, EngineConfig{})
	_, inst := te.instance(t, StoreConfig{})
	_, err := call(t, inst, "deep")
	tr := asTrap(t, err, TrapUnreachableCodeReached)
	if len(tr.Backtrace) < 2 {
		t.Fatalf("backtrace %v, want the two guest frames", tr.Backtrace)
	}
	if !strings.Contains(tr.Error(), "unreachable") {
		t.Errorf("message %q", tr.Error())
	}
	// A trap poisons the instance (component model rule); a new one works.
	_, inst2 := te.instance(t, StoreConfig{})
	if _, err := call(t, inst2, "grow", U32(0)); err != nil {
		t.Fatal(err)
	}
}

func TestTrapEpochDeadline(t *testing.T) {
	te := newTrapEnv(t, EngineConfig{EpochInterruption: true})
	s, inst := te.instance(t, StoreConfig{})
	s.SetEpochDeadline(1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the ticker, as the host's engine-wide one
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				te.e.IncrementEpoch()
			}
		}
	}()
	_, err := call(t, inst, "spin")
	close(done)
	wg.Wait()
	asTrap(t, err, TrapInterrupt)
}

func TestTrapFuel(t *testing.T) {
	te := newTrapEnv(t, EngineConfig{ConsumeFuel: true})
	s, inst := te.instance(t, StoreConfig{Fuel: 10_000})
	_, err := call(t, inst, "spin")
	asTrap(t, err, TrapOutOfFuel)
	if f, err := s.Fuel(); err != nil || f != 0 {
		t.Fatalf("fuel = %d, %v; want 0", f, err)
	}
	// Unlimited by default.
	s2, inst2 := te.instance(t, StoreConfig{})
	if _, err := call(t, inst2, "grow", U32(0)); err != nil {
		t.Fatal(err)
	}
	if err := s2.SetFuel(5); err != nil {
		t.Fatal(err)
	}
	if f, _ := s2.Fuel(); f != 5 {
		t.Fatalf("fuel = %d, want 5", f)
	}
}

func TestMemoryLimit(t *testing.T) {
	te := newTrapEnv(t, EngineConfig{})
	_, inst := te.instance(t, StoreConfig{MemoryLimit: 4 << 16}) // 4 pages
	if v, err := call(t, inst, "grow", U32(2)); err != nil || v != S32(1) {
		t.Fatalf("grow(2) = %v, %v; want old size 1", v, err)
	}
	if v, err := call(t, inst, "grow", U32(2)); err != nil || v != S32(-1) {
		t.Fatalf("grow past the limit = %v, %v; want -1", v, err)
	}
	// Without a limit the same growth succeeds.
	_, inst2 := te.instance(t, StoreConfig{})
	if v, err := call(t, inst2, "grow", U32(16)); err != nil || v != S32(1) {
		t.Fatalf("unlimited grow = %v, %v", v, err)
	}
}

func TestHostFuncErrorAndPanic(t *testing.T) {
	te := newTrapEnv(t, EngineConfig{})
	_, inst := te.instance(t, StoreConfig{})
	_, err := call(t, inst, "fail", U32(1))
	if !errors.Is(err, errHost) {
		t.Fatalf("err = %v, want errHost", err)
	}
	tr := asTrap(t, err, TrapUnknown)
	if len(tr.Backtrace) == 0 {
		t.Error("no guest backtrace for a host error")
	}

	_, inst2 := te.instance(t, StoreConfig{})
	_, err = call(t, inst2, "fail", U32(2))
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *PanicError cause", err)
	}
	if pe.Value != "boom in host" || pe.Func != "fail" || !bytes.Contains(pe.Stack, []byte("traps_test.go")) {
		t.Fatalf("panic error %+v", pe)
	}

	_, inst3 := te.instance(t, StoreConfig{})
	if _, err := call(t, inst3, "fail", U32(0)); err != nil {
		t.Fatalf("no failure: %v", err)
	}
}

func TestMissingImport(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	c := mustComponent(t, e, trapWAT)
	l := mustLinker(t, e)
	s := mustStore(t, e, StoreConfig{})
	_, err := l.Instantiate(s, c)
	if err == nil || !strings.Contains(err.Error(), "fail") {
		t.Fatalf("err = %v, want one naming the import \"fail\"", err)
	}
	// Frozen after first use.
	if err := l.Root().AddFunc("fail", func(*Caller, []Val, []Val) error { return nil }); err == nil {
		t.Fatal("AddFunc after Instantiate succeeded")
	}
	// Unknown imports as traps: instantiates, and calling the import traps.
	l2 := mustLinker(t, e)
	if err := l2.DefineUnknownImportsAsTraps(c); err != nil {
		t.Fatal(err)
	}
	s2 := mustStore(t, e, StoreConfig{})
	inst, err := l2.Instantiate(s2, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, inst, "fail", U32(0)); err == nil {
		t.Fatal("calling a trapping import succeeded")
	}
}

func TestLinkerDuplicates(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	l := mustLinker(t, e)
	nop := func(*Caller, []Val, []Val) error { return nil }
	a, err := l.Root().Instance("ns:pkg/iface@0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AddFunc("f", nop); err != nil {
		t.Fatal(err)
	}
	if err := a.AddFunc("f", nop); err == nil {
		t.Fatal("duplicate AddFunc succeeded")
	}
	b, err := l.Root().Instance("ns:pkg/iface@0.1.0")
	if err != nil || b != a {
		t.Fatalf("Instance again = %p, %v; want the same instance", b, err)
	}
	if err := l.Root().AddFunc("ns:pkg/iface@0.1.0", nop); err == nil {
		t.Fatal("func over an instance name succeeded")
	}
}

const exitWAT = `(component
  (import "wasi:cli/exit@0.2.0" (instance $exit
    (export "exit" (func (param "status" (result))))))
  (alias export $exit "exit" (func $exit_f))
  (core func $exit_low (canon lower (func $exit_f)))
  (core module $m
    (import "h" "exit" (func $exit (param i32)))
    (func (export "run") (param i32) (call $exit (local.get 0))))
  (core instance $i (instantiate $m (with "h" (instance (export "exit" (func $exit_low))))))
  (func (export "run") (param "fail" bool) (canon lift (core func $i "run")))
)`

func TestWASIExit(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	c := mustComponent(t, e, exitWAT)
	l := mustLinker(t, e)
	if err := l.AddWASIP2(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fail   bool
		status int
	}{{false, 0}, {true, 1}} {
		s := mustStore(t, e, StoreConfig{WASI: &WASIConfig{Args: []string{"agent", "x"}, Env: map[string]string{"A": "1"}}})
		inst, err := l.Instantiate(s, c)
		if err != nil {
			t.Fatal(err)
		}
		_, err = call(t, inst, "run", Bool(tc.fail))
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Status != tc.status {
			t.Fatalf("exit(fail=%v): err = %v, want ExitError{%d}", tc.fail, err, tc.status)
		}
	}
}

func TestSerializeRoundTrip(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	c := mustComponent(t, e, echoWAT(prim("string")))
	blob, err := c.Serialize()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "echo.cwasm")
	if err := os.WriteFile(path, blob, 0o600); err != nil {
		t.Fatal(err)
	}
	fromBytes, err := DeserializeComponent(e, blob)
	if err != nil {
		t.Fatal(err)
	}
	defer fromBytes.Close()
	fromFile, err := DeserializeComponentFile(e, path)
	if err != nil {
		t.Fatal(err)
	}
	defer fromFile.Close()
	for _, dc := range []*Component{c, fromBytes, fromFile} {
		l := mustLinker(t, e)
		l.Root().AddFunc("echo", func(_ *Caller, args, results []Val) error {
			results[0] = String(strings.ToUpper(string(args[0].(String))))
			return nil
		})
		s := mustStore(t, e, StoreConfig{})
		f := mustFunc(t, l, s, dc, "run")
		if v, err := f.Call(String("héllo")); err != nil || v != String("HÉLLO") {
			t.Fatalf("call = %v, %v", v, err)
		}
	}

	// Corrupt blobs are errors, not crashes.
	for name, bad := range map[string][]byte{
		"truncated": blob[:len(blob)/2],
		"garbage":   bytes.Repeat([]byte{0xAB}, 4096),
		"flipped":   append([]byte{blob[0] ^ 0xFF}, blob[1:]...),
	} {
		if c, err := DeserializeComponent(e, bad); err == nil {
			c.Close()
			t.Errorf("%s: deserialize succeeded", name)
		}
	}
	if _, err := DeserializeComponent(e, nil); err == nil {
		t.Error("empty blob deserialized")
	}
	if _, err := DeserializeComponentFile(e, filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing file deserialized")
	}
	// An engine with other settings refuses the artifact.
	other := mustEngine(t, EngineConfig{ConsumeFuel: true})
	if c, err := DeserializeComponent(other, blob); err == nil {
		c.Close()
		t.Error("artifact accepted by an incompatible engine")
	}
}

func TestIntrospection(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	c := mustComponent(t, e, `(component
  (import "toolhost:agent/log@0.1.0" (instance
    (export "info" (func (param "msg" string)))))
  (core module $m
    (memory (export "mem") 1)
    (func (export "run") (param i32 i32) (result i32) unreachable)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) unreachable))
  (core instance $i (instantiate $m))
  (func (export "run") (param "input" string) (result (result string (error string)))
    (canon lift (core func $i "run") (memory $i "mem") (realloc (func $i "realloc"))))
)`)
	imps, err := c.Imports()
	if err != nil {
		t.Fatal(err)
	}
	if len(imps) != 1 || imps[0].Name != "toolhost:agent/log@0.1.0" || imps[0].Kind != ItemInstance ||
		len(imps[0].Exports) != 1 || imps[0].Exports[0].Func.String() != "func(msg: string)" {
		t.Fatalf("imports = %+v", imps)
	}
	exps, err := c.Exports()
	if err != nil {
		t.Fatal(err)
	}
	if len(exps) != 1 || exps[0].Name != "run" || exps[0].Kind != ItemFunc {
		t.Fatalf("exports = %+v", exps)
	}
	ft := exps[0].Func
	if got := ft.String(); got != "func(input: string) -> result<string, string>" {
		t.Fatalf("run type %q", got)
	}
	if ft.Result.Kind != TypeResult || ft.Result.Ok.Kind != TypeString || ft.Result.Err.Kind != TypeString {
		t.Fatalf("result type %+v", ft.Result)
	}
}

func TestClose(t *testing.T) {
	e, err := NewEngine(EngineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewComponent(e, []byte(echoWAT(prim("u32"))))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := NewLinker(e)
	l.Root().AddFunc("echo", func(_ *Caller, args, results []Val) error { results[0] = args[0]; return nil })
	s, err := NewStore(e, StoreConfig{Data: "agent-1"})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := l.Instantiate(s, c)
	if err != nil {
		t.Fatal(err)
	}
	f, err := inst.Func("run")
	if err != nil {
		t.Fatal(err)
	}
	// Engine, component and linker may go first: the store keeps working.
	for _, cl := range []interface{ Close() error }{e, c, l, e, c, l} {
		if err := cl.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := f.Call(U32(3)); err != nil || v != U32(3) {
		t.Fatalf("call after closing engine, component, linker: %v, %v", v, err)
	}
	if s.Data() != "agent-1" {
		t.Fatalf("data %v", s.Data())
	}
	s.Close()
	s.Close()
	if _, err := f.Call(U32(3)); !errors.Is(err, ErrClosed) {
		t.Fatalf("call on closed store: %v", err)
	}
	if _, err := inst.Func("run"); !errors.Is(err, ErrClosed) {
		t.Fatalf("lookup on closed store: %v", err)
	}
	if _, err := NewComponent(e, []byte(echoWAT(prim("u32")))); !errors.Is(err, ErrClosed) {
		t.Fatalf("compile on closed engine: %v", err)
	}
	if _, err := c.Serialize(); !errors.Is(err, ErrClosed) {
		t.Fatalf("serialize closed component: %v", err)
	}
	if _, err := NewStore(e, StoreConfig{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("store on closed engine: %v", err)
	}
	for name, fn := range map[string]func(){
		"IncrementEpoch":   e.IncrementEpoch,
		"SetEpochDeadline": func() { s.SetEpochDeadline(1) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "closed") {
					t.Errorf("%s on closed object: recovered %v", name, r)
				}
			}()
			fn()
		}()
	}
}

func TestCallerData(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	c := mustComponent(t, e, echoWAT(prim("string")))
	l := mustLinker(t, e)
	l.Root().AddFunc("echo", func(caller *Caller, args, results []Val) error {
		results[0] = String(caller.Data().(string) + ":" + string(args[0].(String)))
		return nil
	})
	for _, agent := range []string{"a", "b"} {
		s := mustStore(t, e, StoreConfig{Data: agent})
		f := mustFunc(t, l, s, c, "run")
		if v, err := f.Call(String("x")); err != nil || v != String(agent+":x") {
			t.Fatalf("%s: %v, %v", agent, v, err)
		}
	}
}

func TestNestedExport(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	c := mustComponent(t, e, `(component
  (core module $m (func (export "run") (result i32) (i32.const 7)))
  (core instance $i (instantiate $m))
  (func $run (result u32) (canon lift (core func $i "run")))
  (instance $iface (export "run" (func $run)))
  (export "wasi:cli/run@0.2.0" (instance $iface))
)`)
	exps, err := c.Exports()
	if err != nil {
		t.Fatal(err)
	}
	if len(exps) != 1 || exps[0].Kind != ItemInstance || len(exps[0].Exports) != 1 ||
		exps[0].Exports[0].Name != "run" || exps[0].Exports[0].Func.String() != "func() -> u32" {
		t.Fatalf("exports = %+v", exps)
	}
	l := mustLinker(t, e)
	s := mustStore(t, e, StoreConfig{})
	inst, err := l.Instantiate(s, c)
	if err != nil {
		t.Fatal(err)
	}
	f, err := inst.Func("wasi:cli/run@0.2.0", "run")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := f.Call(); err != nil || v != U32(7) {
		t.Fatalf("call = %v, %v", v, err)
	}
	if _, err := inst.Func("wasi:cli/run@0.2.0", "missing"); err == nil || !strings.Contains(err.Error(), "wasi:cli/run@0.2.0/missing") {
		t.Fatalf("missing nested export: %v", err)
	}
	if _, err := inst.Func("wasi:cli/run@0.2.0"); err == nil {
		t.Fatal("an instance export looked up as a function")
	}
}

// TestReentrantCall has a host function call into another instance of the
// same store, which calls the host again.
func TestReentrantCall(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	c := mustComponent(t, e, echoWAT(prim("string")))
	l := mustLinker(t, e)
	var inner *Func
	depth := 0
	l.Root().AddFunc("echo", func(caller *Caller, args, results []Val) error {
		depth++
		defer func() { depth-- }()
		if err := caller.Store().Close(); err == nil {
			return errors.New("store closed from inside a host function")
		}
		in := string(args[0].(String))
		if depth == 1 {
			v, err := inner.Call(String(in + ">inner"))
			if err != nil {
				return err
			}
			results[0] = String(string(v.(String)) + ">outer")
			return nil
		}
		results[0] = String(in + ">host")
		return nil
	})
	s := mustStore(t, e, StoreConfig{})
	outer := mustFunc(t, l, s, c, "run")
	inner = mustFunc(t, l, s, c, "run")
	for range 3 {
		v, err := outer.Call(String("x"))
		if err != nil || v != String("x>inner>host>outer") {
			t.Fatalf("call = %v, %v", v, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestEngineConfigs(t *testing.T) {
	for _, cfg := range []EngineConfig{
		{OptLevel: OptNone},
		{OptLevel: OptSpeedAndSize, ParallelCompilation: true},
		{EpochInterruption: true, ConsumeFuel: true, ParallelCompilation: true},
	} {
		e := mustEngine(t, cfg)
		if e.Config() != cfg {
			t.Fatalf("Config() = %+v, want %+v", e.Config(), cfg)
		}
		c := mustComponent(t, e, echoWAT(prim("u32")))
		l := mustLinker(t, e)
		l.Root().AddFunc("echo", func(_ *Caller, args, results []Val) error { results[0] = args[0]; return nil })
		s := mustStore(t, e, StoreConfig{})
		f := mustFunc(t, l, s, c, "run")
		if v, err := f.Call(U32(5)); err != nil || v != U32(5) {
			t.Fatalf("%+v: call = %v, %v", cfg, v, err)
		}
	}
	if _, err := NewEngine(EngineConfig{OptLevel: 9}); err == nil {
		t.Fatal("invalid OptLevel accepted")
	}
}
