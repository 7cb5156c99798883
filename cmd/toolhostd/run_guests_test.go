package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestRunHelloGuests: the hello agent built by the other toolchains (the
// Go port in examples/agents-go, and hello.js built with componentize-qjs)
// runs against the example config like the componentize-js one.
func TestRunHelloGuests(t *testing.T) {
	example := filepath.Join(testenv.Root(t), "configs", "example.toml")
	for _, dir := range []string{"agents-go", "agents-qjs"} {
		t.Run(dir, func(t *testing.T) {
			code, out, errs := runCLI(t, "--config", example, "run", testenv.Agent(t, dir, "hello"))
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errs)
			}
			for _, want := range []string{
				"everything (mcp): ", " tools: echo,",
				"filesystem (mcp): ", "list_allowed_directories",
				`everything.echo({"message":"hello from a WebAssembly agent"}) -> Echo: hello from a WebAssembly agent`,
			} {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
			if !strings.Contains(errs, "hello agent finished: 3 lines") || !strings.Contains(errs, `"agent": "hello"`) {
				t.Errorf("the guest's log line with its agent name is missing from stderr:\n%s", errs)
			}
		})
	}
}

// TestRunGoPanics: a Go agent that panics or dereferences nil exits 2,
// with the trap's guest backtrace (the Go function names) and the Go
// panic message and stack on stderr.
func TestRunGoPanics(t *testing.T) {
	probe := testenv.Agent(t, "test-agents-go", "probe")
	for _, tc := range []struct {
		what, panic string
	}{
		{"nil", "panic: runtime error: invalid memory address or nil pointer dereference"},
		{"error", "panic: boom"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			t.Setenv("TOOLHOSTD_CONFIG", "")
			code, out, errs := runCLI(t, "run", probe, "--input", `{"steps":[{"op":"throw","what":"`+tc.what+`","message":"boom"}]}`)
			if code != 2 || out != "" {
				t.Fatalf("exit %d, stdout %q, want 2 and nothing\n%s", code, out, errs)
			}
			for _, want := range []string{tc.panic, "goroutine 1 [running]:", "main.(*probe).do(", "wasm `unreachable` instruction executed", "guest backtrace:", "main.__probe_.do"} {
				if !strings.Contains(errs, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errs)
				}
			}
		})
	}
}
