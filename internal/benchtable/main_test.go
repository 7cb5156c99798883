package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseAndRender(t *testing.T) {
	in := `goos: linux
pkg: github.com/toolhostd/toolhostd/internal/pump
BenchmarkCallEcho/seq/baseline-2   	  1000	     100 ns/op	  90 p50-ns
BenchmarkCallEcho/seq/baseline-2   	  1000	     120 ns/op	  95 p50-ns
BenchmarkCallEcho/seq/baseline-2   	  1000	     110 ns/op	 100 p50-ns
BenchmarkCallEcho/seq/async-2      	  1000	     220 ns/op	 190 p50-ns
BenchmarkCallEcho/seq/async-2      	  1000	     200 ns/op	 200 p50-ns
BenchmarkCallEcho/seq/async-2      	  1000	     240 ns/op	 210 p50-ns
BenchmarkOther-2  5  3.5 ns/op
PASS
`
	res := parse(strings.NewReader(in))
	if got := median(res.samples["pump.BenchmarkCallEcho/seq/async"]["ns/op"]); got != 220 {
		t.Fatalf("median ns/op = %v, want 220", got)
	}
	var out bytes.Buffer
	render(&out, res)
	table := out.String()
	for _, want := range []string{
		"pump.BenchmarkCallEcho/seq/async   ns/op    220     3       2.000x",
		"pump.BenchmarkCallEcho/seq/async  p50-ns    200     3       2.105x",
		"pump.BenchmarkOther   ns/op   3.50     1",
	} {
		if !strings.Contains(strings.Join(strings.Fields(table), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestTrimProcsAndBaseline(t *testing.T) {
	cases := []struct{ in, name, base string }{
		{"BenchmarkX/baseline-2", "BenchmarkX/baseline", ""},
		{"BenchmarkX/fast-16", "BenchmarkX/fast", "BenchmarkX/baseline"},
		{"BenchmarkY", "BenchmarkY", ""},
		{"BenchmarkZ/a-b", "BenchmarkZ/a-b", "BenchmarkZ/baseline"},
	}
	for _, c := range cases {
		n := trimProcs(c.in)
		if n != c.name {
			t.Errorf("trimProcs(%q) = %q, want %q", c.in, n, c.name)
		}
		if b := baselineOf(n); b != c.base {
			t.Errorf("baselineOf(%q) = %q, want %q", n, b, c.base)
		}
	}
}
