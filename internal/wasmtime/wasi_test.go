package wasmtime

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// stdioWAT writes "hello stdout\n" to stdout and "hello stderr\n" to stderr
// through WASI p2 (wasi:cli/stdout, wasi:cli/stderr, wasi:io/streams) and
// returns 0 when both writes succeeded.
const stdioWAT = `(component
  (import "wasi:io/error@0.2.0" (instance $ioerr
    (export "error" (type (sub resource)))))
  (alias export $ioerr "error" (type $error))
  (import "wasi:io/streams@0.2.0" (instance $streams
    (alias outer 1 $error (type $err))
    (export "error" (type $err-e (eq $err)))
    (export "output-stream" (type $os (sub resource)))
    (type $own-err (own $err-e))
    (type $se (variant (case "last-operation-failed" $own-err) (case "closed")))
    (export "stream-error" (type $se-e (eq $se)))
    (type $borrow-os (borrow $os))
    (type $res (result (error $se-e)))
    (export "[method]output-stream.blocking-write-and-flush"
      (func (param "self" $borrow-os) (param "contents" (list u8)) (result $res)))))
  (alias export $streams "output-stream" (type $os))
  (alias export $streams "[method]output-stream.blocking-write-and-flush" (func $write))
  (import "wasi:cli/stdout@0.2.0" (instance $stdout
    (alias outer 1 $os (type $os-o))
    (export "output-stream" (type $os-e (eq $os-o)))
    (export "get-stdout" (func (result (own $os-e))))))
  (import "wasi:cli/stderr@0.2.0" (instance $stderr
    (alias outer 1 $os (type $os-o))
    (export "output-stream" (type $os-e (eq $os-o)))
    (export "get-stderr" (func (result (own $os-e))))))
  (alias export $stdout "get-stdout" (func $get-stdout))
  (alias export $stderr "get-stderr" (func $get-stderr))
  ` + libcWAT + `
  (core func $get-stdout (canon lower (func $get-stdout)))
  (core func $get-stderr (canon lower (func $get-stderr)))
  (core func $write (canon lower (func $write) (memory $libc "mem")))
  (core func $drop (canon resource.drop $os))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "h" "get-stdout" (func $get-stdout (result i32)))
    (import "h" "get-stderr" (func $get-stderr (result i32)))
    (import "h" "write" (func $write (param i32 i32 i32 i32)))
    (import "h" "drop" (func $drop (param i32)))
    (data (i32.const 2048) "hello stdout\0ahello stderr\0a")
    (func (export "run") (result i32) (local $h i32) (local $fail i32)
      (local.set $h (call $get-stdout))
      (call $write (local.get $h) (i32.const 2048) (i32.const 13) (i32.const 16))
      (local.set $fail (i32.load8_u (i32.const 16)))
      (call $drop (local.get $h))
      (local.set $h (call $get-stderr))
      (call $write (local.get $h) (i32.const 2061) (i32.const 13) (i32.const 16))
      (local.set $fail (i32.or (local.get $fail) (i32.load8_u (i32.const 16))))
      (call $drop (local.get $h))
      (local.get $fail)))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "h" (instance
      (export "get-stdout" (func $get-stdout)) (export "get-stderr" (func $get-stderr))
      (export "write" (func $write)) (export "drop" (func $drop))))))
  (func (export "run") (result u32) (canon lift (core func $i "run")))
)`

func TestWASIStdio(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	c := mustComponent(t, e, stdioWAT)
	l := mustLinker(t, e)
	if err := l.AddWASIP2(); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	s := mustStore(t, e, StoreConfig{WASI: &WASIConfig{Stdout: &stdout, Stderr: &stderr}})
	f := mustFunc(t, l, s, c, "run")
	for range 2 {
		if v, err := f.Call(); err != nil || v != U32(0) {
			t.Fatalf("run = %v, %v", v, err)
		}
	}
	if got := stdout.String(); got != strings.Repeat("hello stdout\n", 2) {
		t.Errorf("stdout %q", got)
	}
	if got := stderr.String(); got != strings.Repeat("hello stderr\n", 2) {
		t.Errorf("stderr %q", got)
	}

	// Without writers the output is discarded, and the guest still succeeds.
	s2 := mustStore(t, e, StoreConfig{})
	f2 := mustFunc(t, l, s2, c, "run")
	if v, err := f2.Call(); err != nil || v != U32(0) {
		t.Fatalf("run without writers = %v, %v", v, err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errHost }

type panickingWriter struct{}

func (panickingWriter) Write([]byte) (int, error) { panic("writer panic") }

// panicOnce panics on its first write and keeps the others.
type panicOnce struct {
	bytes.Buffer
	panicked bool
}

func (w *panicOnce) Write(p []byte) (int, error) {
	if !w.panicked {
		w.panicked = true
		panic("first write")
	}
	return w.Buffer.Write(p)
}

func TestWASIStdioWriterFailure(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	c := mustComponent(t, e, stdioWAT)
	l := mustLinker(t, e)
	if err := l.AddWASIP2(); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	for name, w := range map[string]interface {
		Write([]byte) (int, error)
	}{"error": failingWriter{}, "panic": panickingWriter{}} {
		s := mustStore(t, e, StoreConfig{WASI: &WASIConfig{Stdout: w, Stderr: &stderr}})
		f := mustFunc(t, l, s, c, "run")
		v, err := f.Call()
		// The guest sees a failed write (or a trap), never a crash.
		if err == nil && v == U32(0) {
			t.Errorf("%s: failing stdout reported success", name)
		}
		// A panic is the host's fault: the call returns it, with its stack.
		var pe *PanicError
		if name == "panic" && (!errors.As(err, &pe) || pe.Value != "writer panic" || pe.Func != "WASI stdout writer" || len(pe.Stack) == 0) {
			t.Errorf("panic: the call returned %v (%#v), want the writer's *PanicError", err, pe)
		}
	}
	// The panic is the error of the call it happened in only: the next
	// call, whose writes succeed, succeeds.
	once := &panicOnce{}
	s := mustStore(t, e, StoreConfig{WASI: &WASIConfig{Stdout: once, Stderr: &stderr}})
	f := mustFunc(t, l, s, c, "run")
	if _, err := f.Call(); !errors.As(err, new(*PanicError)) {
		t.Errorf("first call: %v, want the writer's panic", err)
	}
	if v, err := f.Call(); err != nil || v != U32(0) {
		t.Errorf("second call = %v, %v; want 0 (its writes succeeded)", v, err)
	}
	if got := once.String(); got != "hello stdout\n" {
		t.Errorf("stdout %q after the panic", got)
	}
}

// envWAT returns the WASI arguments and environment it was given.
const envWAT = `(component
  (import "wasi:cli/environment@0.2.0" (instance $env
    (export "get-environment" (func (result (list (tuple string string)))))
    (export "get-arguments" (func (result (list string))))))
  (alias export $env "get-environment" (func $get-env))
  (alias export $env "get-arguments" (func $get-args))
  ` + libcWAT + `
  (core func $get-env (canon lower (func $get-env) (memory $libc "mem") (realloc (func $libc "realloc"))))
  (core func $get-args (canon lower (func $get-args) (memory $libc "mem") (realloc (func $libc "realloc"))))
  (core module $m
    (import "libc" "reset" (func $reset))
    (import "h" "env" (func $env (param i32)))
    (import "h" "args" (func $args (param i32)))
    (func (export "env") (result i32) (call $env (i32.const 16)) (i32.const 16))
    (func (export "args") (result i32) (call $args (i32.const 16)) (i32.const 16))
    (func (export "post") (param i32) (call $reset)))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "h" (instance (export "env" (func $get-env)) (export "args" (func $get-args))))))
  (func (export "env") (result (list (tuple string string)))
    (canon lift (core func $i "env") (memory $libc "mem") (realloc (func $libc "realloc")) (post-return (func $i "post"))))
  (func (export "args") (result (list string))
    (canon lift (core func $i "args") (memory $libc "mem") (realloc (func $libc "realloc")) (post-return (func $i "post"))))
)`

func TestWASIArgsEnv(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	c := mustComponent(t, e, envWAT)
	l := mustLinker(t, e)
	if err := l.AddWASIP2(); err != nil {
		t.Fatal(err)
	}
	s := mustStore(t, e, StoreConfig{WASI: &WASIConfig{
		Args: []string{"agent.wasm", "--flag", "ü"},
		Env:  map[string]string{"B": "2", "A": "1"},
	}})
	inst, err := l.Instantiate(s, c)
	if err != nil {
		t.Fatal(err)
	}
	args, err := call(t, inst, "args")
	if want := (List{String("agent.wasm"), String("--flag"), String("ü")}); err != nil || !valEqual(args, want) {
		t.Fatalf("args = %v, %v", args, err)
	}
	env, err := call(t, inst, "env")
	if want := (List{Tuple{String("A"), String("1")}, Tuple{String("B"), String("2")}}); err != nil || !valEqual(env, want) {
		t.Fatalf("env = %v, %v", env, err)
	}
	// The default WASI context is empty.
	s2 := mustStore(t, e, StoreConfig{})
	inst2, err := l.Instantiate(s2, c)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := call(t, inst2, "args"); err != nil || len(v.(List)) != 0 {
		t.Fatalf("default args = %v, %v", v, err)
	}
	if v, err := call(t, inst2, "env"); err != nil || len(v.(List)) != 0 {
		t.Fatalf("default env = %v, %v", v, err)
	}
}

func TestWASIConfigErrors(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	for name, w := range map[string]*WASIConfig{
		"args": {Args: []string{"\xff"}},
		"env":  {Env: map[string]string{"K": "\xfe"}},
		"dir":  {Preopens: []Preopen{{HostPath: "/nonexistent/dir", GuestPath: "/"}}},
		"nul":  {Args: []string{"a\x00b"}},
		"eq":   {Env: map[string]string{"A=B": "x"}},
	} {
		s, err := NewStore(e, StoreConfig{WASI: w})
		if err == nil {
			s.Close()
			t.Errorf("%s: invalid WASI config accepted", name)
		}
	}
	dir := t.TempDir()
	s, err := NewStore(e, StoreConfig{WASI: &WASIConfig{Preopens: []Preopen{{HostPath: dir, GuestPath: "/data", ReadOnly: true}}}})
	if err != nil {
		t.Fatalf("valid preopen: %v", err)
	}
	s.Close()
}
