package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fleet is a config of n agents with four keys each, over one tooling.
func fleet(n int) []byte {
	var b strings.Builder
	b.WriteString("version = 1\n\n[tooling.fs]\ncommand = \"node\"\nargs = [\"server.js\"]\n")
	for i := range n {
		fmt.Fprintf(&b, "\n[agent.a%d]\ncomponent = \"agents/hello.wasm\"\ntoolings = [\"fs\"]\ninput = \"%d\"\nrestart = \"always\"\n", i, i)
	}
	return []byte(b.String())
}

// plainKeys is a config with n keys in plain tables of per keys each (its
// own table: [extra] is not part of the schema, so the keys are refused
// as unknown, and each costs an error).
func plainKeys(n, per int) []byte {
	var b strings.Builder
	b.WriteString("version = 1\n")
	for i := range n {
		if i%per == 0 {
			fmt.Fprintf(&b, "[tooling.t%d]\ncommand = \"x\"\n[tooling.t%d.env]\n", i, i)
		}
		fmt.Fprintf(&b, "K%d = \"v\"\n", i)
	}
	return []byte(b.String())
}

func BenchmarkParseAgents(b *testing.B) {
	for _, n := range []int{1000, 10000, 40000} {
		data := fleet(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Parse("/cfg/fleet.toml", data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkParsePlainKeys(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		for _, per := range []int{1000, n} {
			data := plainKeys(n, per)
			b.Run(fmt.Sprintf("%d/per_table=%d", n, per), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if _, err := Parse("/cfg/keys.toml", data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestParseFleet: a config of 10,000 agents (it was refused at 2,500: the
// old bound counted keys) and one of 100,000 keys in plain tables load,
// every agent and key in place, within 200 MB of allocation; a mistake
// in the last agent is still named with its position. Time is measured
// by BenchmarkParseAgents and BenchmarkParsePlainKeys.
func TestParseFleet(t *testing.T) {
	const n = 10000
	data := fleet(n)
	alloc, err := parseAlloc(t, data)
	if err != nil {
		t.Fatal(err)
	}
	if alloc > 200<<20 {
		t.Errorf("%d agents: %d bytes allocated; the bound is 200 MB", n, alloc)
	}
	c, err := Parse("/cfg/fleet.toml", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Agent) != n {
		t.Fatalf("%d agents, want %d", len(c.Agent), n)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		a := c.Agent[fmt.Sprintf("a%d", i)]
		if a == nil || a.Input != fmt.Sprint(i) || len(a.Toolings) != 1 || a.Restart != "always" {
			t.Errorf("agent a%d = %+v", i, a)
		}
	}

	bad := append(fleet(n), "\n[agent.last]\ncomponent = \"x.wasm\"\ntoolings = [\"nope\"]\n"...)
	lines := strings.Count(string(bad), "\n")
	_, err = Parse("/cfg/fleet.toml", bad)
	want := fmt.Sprintf("/cfg/fleet.toml:%d:13: agent.last.toolings[0]: no tooling named \"nope\"", lines)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v\nwant %s…", err, want)
	}

	keys := plainKeys(100000, 1000)
	c, err = Parse("/cfg/keys.toml", keys)
	if err != nil {
		t.Fatal(err)
	}
	if tl := c.Tooling["t99000"]; len(c.Tooling) != 100 || tl == nil || len(tl.Env) != 1000 || tl.Env["K99999"] != "v" {
		t.Errorf("%d toolings; t99000 = %+v", len(c.Tooling), tl)
	}
}

// TestLoadTooLarge: a file past MaxSize (a sparse 256 MiB one) is refused
// with the bound, before it is parsed.
func TestLoadTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.toml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4 * MaxSize); err != nil { // a sparse file of NULs
		t.Fatal(err)
	}
	f.Close()
	_, err = Load(path)
	want := fmt.Sprintf("%s:1:1: the config is more than %d bytes (64 MiB)", path, MaxSize)
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}
