package wasmtime

import (
	"fmt"
	"strconv"
	"strings"
)

// Bounds of a formatted guest backtrace: a stack overflow has thousands of
// frames, nearly all the same few.
const (
	// maxCycle is the longest run of frames recognised as repeating
	// (recursion through up to that many functions).
	maxCycle = 4
	// maxShownLines caps the lines of a formatted backtrace; the frames of
	// the middle are left out beyond it.
	maxShownLines = 24
	// maxFrameText caps one frame's text (function names can be long).
	maxFrameText = 200
)

// backtraceLine is one line of a formatted backtrace: a frame, or a note
// that the frames above repeat.
type backtraceLine struct {
	index int    // the frame's index, for a frame
	frame string // "" for a note
	note  string
}

// collapse turns frames into lines, replacing each run of a repeating
// block of up to maxCycle frames (seen at least three times) by the block
// once and a note of how many frames more repeat it.
func collapse(frames []Frame) []backtraceLine {
	text := make([]string, len(frames))
	for i, f := range frames {
		s := f.String()
		if len(s) > maxFrameText {
			s = s[:maxFrameText] + "…"
		}
		text[i] = s
	}
	var out []backtraceLine
	for i := 0; i < len(text); {
		p, reps := cycleAt(text, i)
		for j := 0; j < p; j++ {
			out = append(out, backtraceLine{index: i + j, frame: text[i+j]})
		}
		if reps < 3 {
			i += p
			continue
		}
		more := (reps - 1) * p
		var of string
		if p == 1 {
			of = text[i]
		} else {
			of = "the " + strconv.Itoa(p) + " above"
		}
		out = append(out, backtraceLine{note: fmt.Sprintf("… %s more frames of %s", thousands(more), of)})
		i += reps * p
	}
	return out
}

// cycleAt finds the shortest block of at most maxCycle frames starting at
// i that repeats right after itself, and how many times it occurs in a row;
// (1, 1) when none does.
func cycleAt(text []string, i int) (period, reps int) {
	for p := 1; p <= maxCycle && i+2*p <= len(text); p++ {
		n := 1
		for i+(n+1)*p <= len(text) && equalRun(text, i, i+n*p, p) {
			n++
		}
		if n >= 3 {
			return p, n
		}
	}
	return 1, 1
}

func equalRun(text []string, a, b, n int) bool {
	for k := 0; k < n; k++ {
		if text[a+k] != text[b+k] {
			return false
		}
	}
	return true
}

// formatBacktrace writes the collapsed backtrace, at most maxShownLines
// lines: the innermost frames and the outermost, with a note of how many
// lines were left out between.
func formatBacktrace(b *strings.Builder, frames []Frame) {
	lines := collapse(frames)
	if len(lines) > maxShownLines {
		head, tail := maxShownLines-maxShownLines/4, maxShownLines/4
		omitted := len(lines) - head - tail
		kept := append(lines[:head:head], backtraceLine{note: fmt.Sprintf("… %s more lines of backtrace left out", thousands(omitted))})
		lines = append(kept, lines[len(lines)-tail:]...)
	}
	for _, l := range lines {
		if l.frame == "" {
			b.WriteString("\n  ")
			b.WriteString(l.note)
			continue
		}
		fmt.Fprintf(b, "\n  %d: %s", l.index, l.frame)
	}
}

// thousands formats n with comma separators: 16,300.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
