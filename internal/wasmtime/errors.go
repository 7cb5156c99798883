package wasmtime

// #include "capi.h"
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"
)

// ErrClosed is returned (wrapped) by methods called on a closed object.
var ErrClosed = errors.New("wasmtime: object is closed")

// TrapCode classifies a trap. wasmtime's component C API returns traps as
// plain errors, so the code is recovered from the "wasm trap: ..." line of
// the message; TrapUnknown means the error was not a wasm trap (for example a
// host function error or a type mismatch).
type TrapCode int

// Trap codes, in the order of wasmtime_trap_code_enum (TrapUnknown is ours).
const (
	TrapStackOverflow TrapCode = iota
	TrapMemoryOutOfBounds
	TrapHeapMisaligned
	TrapTableOutOfBounds
	TrapIndirectCallToNull
	TrapBadSignature
	TrapIntegerOverflow
	TrapIntegerDivisionByZero
	TrapBadConversionToInteger
	TrapUnreachableCodeReached
	TrapInterrupt
	TrapAlwaysTrapAdapter
	TrapOutOfFuel
	TrapAtomicWaitNonSharedMemory
	TrapNullReference
	TrapArrayOutOfBounds
	TrapAllocationTooLarge
	TrapCastFailure
	TrapCannotEnterComponent
	TrapNoAsyncResult
	TrapDisabledOpcode
	TrapUnknown TrapCode = -1
)

// trapMessages maps the Display text wasmtime gives each trap code.
var trapMessages = []struct {
	code TrapCode
	text string
}{
	{TrapStackOverflow, "call stack exhausted"},
	{TrapMemoryOutOfBounds, "out of bounds memory access"},
	{TrapHeapMisaligned, "unaligned atomic"},
	{TrapTableOutOfBounds, "undefined element: out of bounds table access"},
	{TrapIndirectCallToNull, "uninitialized element"},
	{TrapBadSignature, "indirect call type mismatch"},
	{TrapIntegerOverflow, "integer overflow"},
	{TrapIntegerDivisionByZero, "integer divide by zero"},
	{TrapBadConversionToInteger, "invalid conversion to integer"},
	{TrapUnreachableCodeReached, "wasm `unreachable` instruction executed"},
	{TrapInterrupt, "interrupt"},
	{TrapAlwaysTrapAdapter, "degenerate component adapter called"},
	{TrapOutOfFuel, "all fuel consumed by WebAssembly"},
	{TrapAtomicWaitNonSharedMemory, "atomic wait on non-shared memory"},
	{TrapNullReference, "null reference"},
	{TrapArrayOutOfBounds, "out of bounds array access"},
	{TrapAllocationTooLarge, "allocation size too large"},
	{TrapCastFailure, "cast failure"},
	{TrapCannotEnterComponent, "cannot enter component instance"},
	{TrapNoAsyncResult, "async-lifted export failed to produce a result"},
	{TrapDisabledOpcode, "pulley opcode disabled"},
}

func (c TrapCode) String() string {
	for _, m := range trapMessages {
		if m.code == c {
			return m.text
		}
	}
	return "unknown"
}

// Frame is one guest frame of a trap's backtrace, innermost first.
type Frame struct {
	Module       string // core module name, if known
	Func         string // function name, if known
	FuncIndex    uint32
	FuncOffset   uint
	ModuleOffset uint
}

func (f Frame) String() string {
	name := f.Func
	if name == "" {
		name = fmt.Sprintf("<wasm function %d>", f.FuncIndex)
	}
	if f.Module != "" {
		name = f.Module + "!" + name
	}
	if f.ModuleOffset == ^uint(0) { // wasmtime knows no offset (a trap at entry)
		return name
	}
	return fmt.Sprintf("%s @ 0x%x", name, f.ModuleOffset)
}

// Trap is an error raised while running guest code (or instantiating it):
// a wasm trap, a failing host function, an invalid value crossing the
// boundary.
type Trap struct {
	Code      TrapCode
	Message   string  // wasmtime's full message, including its own backtrace text
	Backtrace []Frame // guest frames, innermost first; may be empty
	Cause     error   // the host function's error or *PanicError, if one caused this
}

// Error is one line (the trap and its innermost frame), followed, when the
// guest was more than one frame deep, by the guest backtrace: repeated
// frames collapsed ("… 16,300 more frames of f"), and at most
// maxShownLines lines.
func (t *Trap) Error() string {
	var b strings.Builder
	b.WriteString("wasmtime: ")
	switch {
	case t.Cause != nil:
		b.WriteString(t.Cause.Error())
	case t.Code != TrapUnknown:
		b.WriteString("wasm trap: ")
		b.WriteString(t.Code.String())
	default:
		b.WriteString(t.Message)
		return b.String()
	}
	if len(t.Backtrace) > 0 {
		b.WriteString(" (in ")
		b.WriteString(t.Backtrace[0].String())
		b.WriteString(")")
	}
	if len(t.Backtrace) > 1 {
		b.WriteString("\nguest backtrace:")
		formatBacktrace(&b, t.Backtrace)
	}
	return b.String()
}

// Unwrap returns the host-side cause, so errors.Is/As see it.
func (t *Trap) Unwrap() error { return t.Cause }

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// ExitError is returned by Func.Call when the guest called WASI exit.
type ExitError struct{ Status int }

func (e *ExitError) Error() string {
	return fmt.Sprintf("wasmtime: guest exited with status %d", e.Status)
}

// PanicError is the Cause of a Trap raised because a host callback panicked,
// or the error of a call during which a WASI output writer panicked.
type PanicError struct {
	Func  string // the host function (or "destructor of R", "WASI stdout writer")
	Value any    // the value passed to panic
	Stack []byte // the goroutine stack at the panic
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("host function %s panicked: %v", e.Func, e.Value)
}

// takeError converts and frees a wasmtime error. cause, if non-nil, is the
// Go error a host callback reported for this failure.
func takeError(err *C.wasmtime_error_t, cause error) error {
	if err == nil {
		return nil
	}
	defer C.wasmtime_error_delete(err)
	var status C.int
	if C.wasmtime_error_exit_status(err, &status) {
		return &ExitError{Status: int(status)}
	}
	var msg C.wasm_name_t
	C.wasmtime_error_message(err, &msg)
	text := goString(&msg)
	C.wasm_byte_vec_delete(&msg)
	text = cleanMessage(text)

	var trace C.wasm_frame_vec_t
	C.wasmtime_error_wasm_trace(err, &trace)
	var frames []Frame
	if trace.size > 0 {
		for _, f := range unsafe.Slice(trace.data, int(trace.size)) {
			fr := Frame{
				FuncIndex:    uint32(C.wasm_frame_func_index(f)),
				FuncOffset:   uint(C.wasm_frame_func_offset(f)),
				ModuleOffset: uint(C.wasm_frame_module_offset(f)),
			}
			if n := C.wasmtime_frame_func_name(f); n != nil {
				fr.Func = goString(n)
			}
			if n := C.wasmtime_frame_module_name(f); n != nil {
				fr.Module = goString(n)
			}
			frames = append(frames, fr)
		}
	}
	C.wasm_frame_vec_delete(&trace)
	return &Trap{Code: trapCode(text), Message: text, Backtrace: frames, Cause: cause}
}

// plainError converts and frees a wasmtime error that is not a trap
// (compilation, linking, configuration).
func plainError(prefix string, err *C.wasmtime_error_t) error {
	if err == nil {
		return nil
	}
	var msg C.wasm_name_t
	C.wasmtime_error_message(err, &msg)
	text := cleanMessage(goString(&msg))
	C.wasm_byte_vec_delete(&msg)
	C.wasmtime_error_delete(err)
	return fmt.Errorf("wasmtime: %s: %s", prefix, foldCauses(text))
}

// foldCauses writes anyhow's "Caused by:" chain on the error's own line,
// each cause after ": ", as Go errors read:
//
//	failed to parse WebAssembly module
//
//	Caused by:
//	    attempted to parse a wasm module with a component parser
//
// becomes "failed to parse WebAssembly module: attempted to parse a wasm
// module with a component parser". anyhow numbers the causes when there
// are several ("0: ...", "1: ..."); the numbers go. Text before the chain
// is kept as it is.
func foldCauses(s string) string {
	head, chain, ok := strings.Cut(s, "\n\nCaused by:\n")
	if !ok {
		return s
	}
	var causes []string
	numbered := true
	for line := range strings.SplitSeq(chain, "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		n, _, ok := strings.Cut(line, ": ")
		numbered = numbered && ok && n != "" && strings.Trim(n, "0123456789") == ""
		causes = append(causes, line)
	}
	if numbered && len(causes) > 1 {
		for i, c := range causes {
			_, causes[i], _ = strings.Cut(c, ": ")
		}
	}
	return strings.Join(append([]string{strings.TrimRight(head, "\n ")}, causes...), ": ")
}

func trapCode(msg string) TrapCode {
	i := strings.LastIndex(msg, "wasm trap: ")
	if i < 0 {
		return TrapUnknown
	}
	rest := firstLine(msg[i+len("wasm trap: "):])
	for _, m := range trapMessages {
		if rest == m.text {
			return m.code
		}
	}
	return TrapUnknown
}

func closedErr(what string) error { return fmt.Errorf("%s: %w", what, ErrClosed) }

func closedPanic(what string) { panic("wasmtime: use of closed " + what) }

// cleanMessage drops the NUL terminator and the Rust-side stack backtrace
// wasmtime appends when RUST_BACKTRACE is set (it has no useful frames).
func cleanMessage(s string) string {
	s = strings.TrimRight(s, "\x00")
	if i := strings.Index(s, "\n\nStack backtrace:"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimRight(s, "\n ")
}
