package host

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// FuzzLineLogger: whatever the chunking of a guest's output, the logged
// lines are its lines (a trailing \r dropped, lines longer than maxLine
// split), in order, each with the stream's name.
func FuzzLineLogger(f *testing.F) {
	f.Add([]byte("hello\nworld\n"), uint8(3))
	f.Add([]byte("no newline"), uint8(1))
	f.Add([]byte("crlf\r\n\r\n\nend"), uint8(2))
	f.Add(bytes.Repeat([]byte("x"), maxLine+10), uint8(200))
	f.Add([]byte("esc \x1b[2J and bell \x07\n"), uint8(4))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		core, logs := observer.New(zapcore.InfoLevel)
		w := newLineLogger(zap.New(core), "stdout")
		step := int(chunk) + 1
		for i := 0; i < len(data); i += step {
			n, err := w.Write(data[i:min(i+step, len(data))])
			if err != nil || n != min(step, len(data)-i) {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		w.Flush()
		var want []string
		rest := data
		for len(rest) > 0 {
			i := bytes.IndexByte(rest, '\n')
			line := rest
			if i >= 0 {
				line, rest = rest[:i], rest[i+1:]
			} else {
				rest = nil
			}
			for len(line) > maxLine {
				want = append(want, guestText(string(line[:maxLine])))
				line = line[maxLine:]
			}
			want = append(want, guestText(strings.TrimSuffix(string(line), "\r")))
		}
		var got []string
		for _, e := range logs.All() {
			if e.ContextMap()["stream"] != "stdout" {
				t.Fatalf("entry without the stream: %v", e.ContextMap())
			}
			got = append(got, e.Message)
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
			t.Fatalf("logged %q, want %q", got, want)
		}
	})
}

func TestGuestTextEscapesControlCharacters(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text, ünïcode ✓", "plain text, ünïcode ✓"},
		{"tab\tstays", "tab\tstays"},
		{"forged\n2026-01-01T00:00:00Z\tERROR\thost\tfake", `forged\u000a2026-01-01T00:00:00Z` + "\tERROR\thost\tfake"},
		{"\x1b[31mred\x1b[0m", `\u001b[31mred\u001b[0m`},
		{"cr\rdel\x7f", `cr\u000ddel\u007f`},
	}
	for _, c := range cases {
		if got := guestText(c.in); got != c.want {
			t.Errorf("guestText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
