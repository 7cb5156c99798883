package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// FuzzParse: Parse never panics; every error it reports lies inside the
// document; a config that parses, written back out with go-toml and parsed
// again, gives the same config (defaults, resolved paths and transports are
// fixed points).
func FuzzParse(f *testing.F) {
	f.Add([]byte(Default()))
	for _, dir := range []string{"valid", "invalid"} {
		files, _ := filepath.Glob(filepath.Join("testdata", dir, "*.toml"))
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil {
				f.Add(data)
			}
		}
	}
	f.Add([]byte("version = 1\n[tooling.a]\nurl = \"http://h\"\ntransport = \"sse\"\n"))
	f.Add([]byte("version = 1\n[[tooling.x]]\n[agent.\"\"]\n"))
	// Nesting at and past MaxNesting, every way TOML nests, and brackets
	// hidden in strings and comments.
	f.Add([]byte("version = 1\nx = " + strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting) + "\n"))
	f.Add([]byte("version = 1\nx = " + strings.Repeat("[{a=", 40) + "1" + strings.Repeat("}]", 40) + "\n"))
	f.Add([]byte("version = 1\n[" + strings.Repeat("a.", 40) + "a]\n" + strings.Repeat("b.", 40) + "c = { " + strings.Repeat("d.", 40) + "e = 1 }\n"))
	f.Add([]byte("version = 1 # [[[[\nx = [\"[[[\", '{{{', \"\"\"\n[[[\\\"\"\"\" \"\"\", '''\n{{{ '' ''', # ]]]\n]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("/cfg/f.toml", data)
		if err != nil {
			if c != nil {
				t.Fatal("config returned with an error")
			}
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error %T is not a non-empty Errors: %v", err, err)
			}
			lines := strings.Count(string(data), "\n") + 1
			for _, e := range errs {
				if e.Line < 1 || e.Line > lines || e.Col < 1 {
					t.Fatalf("error outside the document (%d lines): %+v", lines, e)
				}
			}
			return
		}
		out, err := toml.Marshal(c)
		if err != nil {
			t.Fatalf("marshal a parsed config: %v", err)
		}
		c2, err := Parse("/cfg/f.toml", out)
		if err != nil {
			t.Fatalf("re-parse of\n%s\nfailed:\n%v", out, err)
		}
		out2, err := toml.Marshal(c2)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != string(out2) {
			t.Fatalf("not a fixed point:\n%s\n---\n%s", out, out2)
		}
	})
}
