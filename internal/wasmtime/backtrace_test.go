package wasmtime

import (
	"fmt"
	"strings"
	"testing"
)

const recursionWAT = `(component
  (core module $m
    (func $f (export "f") (call $f))
    (func $g (export "g") (call $h))
    (func $h (call $g))
  )
  (core instance $i (instantiate $m))
  (func (export "f") (canon lift (core func $i "f")))
  (func (export "g") (canon lift (core func $i "g")))
)`

// TestStackOverflowBacktrace: infinite recursion (direct, and through two
// functions) overflows the stack with thousands of frames; the message
// shows each repeating run once with a count, in a few lines, and the
// frames are all still in Backtrace.
func TestStackOverflowBacktrace(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	c := mustComponent(t, e, recursionWAT)
	l := mustLinker(t, e)
	for _, tc := range []struct{ fn, note string }{
		{"f", " more frames of m!f @ 0x"},
		{"g", " more frames of the 2 above"},
	} {
		t.Run(tc.fn, func(t *testing.T) {
			s := mustStore(t, e, StoreConfig{})
			inst, err := l.Instantiate(s, c)
			if err != nil {
				t.Fatal(err)
			}
			_, err = call(t, inst, tc.fn)
			tr := asTrap(t, err, TrapStackOverflow)
			if len(tr.Backtrace) < 1000 {
				t.Fatalf("%d frames; want a deep stack", len(tr.Backtrace))
			}
			msg := tr.Error()
			t.Logf("%d frames: %d bytes of message:\n%s", len(tr.Backtrace), len(msg), msg)
			if len(msg) > 2048 || strings.Count(msg, "\n") > maxShownLines+1 {
				t.Errorf("message of %d bytes, %d lines", len(msg), strings.Count(msg, "\n")+1)
			}
			if !strings.Contains(msg, tc.note) || !strings.HasPrefix(msg, "wasmtime: wasm trap: call stack exhausted (in m!") {
				t.Errorf("message does not collapse the recursion (%q)", tc.note)
			}
			// The counts add up to the frames.
			if n := shownFrames(msg); n != len(tr.Backtrace) {
				t.Errorf("the message accounts for %d frames, the trap has %d", n, len(tr.Backtrace))
			}
		})
	}
}

// shownFrames counts the frames a formatted backtrace accounts for: the
// frame lines and the counts of the notes.
func shownFrames(msg string) int {
	n := 0
	for _, line := range strings.Split(msg, "\n")[2:] {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "… "); ok {
			num, _, _ := strings.Cut(rest, " ")
			var k int
			fmt.Sscanf(strings.ReplaceAll(num, ",", ""), "%d", &k)
			n += k
			continue
		}
		n++
	}
	return n
}

func frames(names ...string) []Frame {
	out := make([]Frame, len(names))
	for i, n := range names {
		out[i] = Frame{Module: "m", Func: n, ModuleOffset: 0x10}
	}
	return out
}

func formatted(fs []Frame) string {
	var b strings.Builder
	formatBacktrace(&b, fs)
	return strings.TrimPrefix(b.String(), "\n")
}

func TestFormatBacktrace(t *testing.T) {
	rep := func(n int, s ...string) []string {
		var out []string
		for range n {
			out = append(out, s...)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		frames []string
		want   string
	}{
		{"short", []string{"a", "b", "c"}, "  0: m!a @ 0x10\n  1: m!b @ 0x10\n  2: m!c @ 0x10"},
		{"twice is not collapsed", []string{"a", "a", "b"}, "  0: m!a @ 0x10\n  1: m!a @ 0x10\n  2: m!b @ 0x10"},
		{"recursion", append(append([]string{"x"}, rep(16382, "f")...), "run"),
			"  0: m!x @ 0x10\n  1: m!f @ 0x10\n  … 16,381 more frames of m!f @ 0x10\n  16383: m!run @ 0x10"},
		{"mutual", append(rep(100, "g", "h"), "run"),
			"  0: m!g @ 0x10\n  1: m!h @ 0x10\n  … 198 more frames of the 2 above\n  200: m!run @ 0x10"},
		{"three-cycle", append(rep(4, "a", "b", "c"), "run"),
			"  0: m!a @ 0x10\n  1: m!b @ 0x10\n  2: m!c @ 0x10\n  … 9 more frames of the 3 above\n  12: m!run @ 0x10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := formatted(frames(tc.frames...)); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	// Distinct frames beyond the cap: the innermost and the outermost are
	// shown, the middle counted.
	var many []string
	for i := range 1000 {
		many = append(many, fmt.Sprintf("f%d", i))
	}
	got := formatted(frames(many...))
	lines := strings.Split(got, "\n")
	if len(lines) != maxShownLines+1 || lines[0] != "  0: m!f0 @ 0x10" || lines[len(lines)-1] != "  999: m!f999 @ 0x10" ||
		!strings.Contains(got, "\n  … 976 more lines of backtrace left out\n") {
		t.Errorf("capped backtrace:\n%s", got)
	}
	// A long function name is cut.
	long := formatted(frames(strings.Repeat("n", 10000), "b"))
	if len(long) > 2*maxFrameText+64 {
		t.Errorf("%d bytes for two frames", len(long))
	}
	if thousands(1234567) != "1,234,567" || thousands(999) != "999" || thousands(1000) != "1,000" {
		t.Error("thousands")
	}
}
