package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/kv"
)

// TestDocKeyValue: the guest code of docs/keyvalue.md works as shown. Its
// JavaScript is testdata/agents/kvnotes.js (but for the path of sdk/js),
// built by make agents with both JS toolchains; its Go is built here as
// agents-go.md says. Each runs twice on one bucket: the second run sees
// what the first wrote.
func TestDocKeyValue(t *testing.T) {
	s := env(t)
	doc, err := os.ReadFile(filepath.Join(s.root, "docs", "keyvalue.md"))
	if err != nil {
		t.Fatal(err)
	}
	js, goCode := codeBlock(t, string(doc), "js"), codeBlock(t, string(doc), "go")
	file, err := os.ReadFile(filepath.Join("testdata", "agents", "kvnotes.js"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Replace(string(file), "'../../../../sdk/js/toolhost.js'", "'../../sdk/js/toolhost.js'", 1); got != js {
		t.Errorf("docs/keyvalue.md's JavaScript is not testdata/agents/kvnotes.js:\n%s", js)
	}
	component := buildDocGoAgent(t, s, "notes", goCode)
	progs := map[string]*Program{
		"componentize-js":  s.program(t, "test-agents", "kvnotes"),
		"componentize-qjs": s.program(t, "test-agents-qjs", "kvnotes"),
	}
	p, err := s.host.LoadFile(component)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	progs["go"] = p
	for name, p := range progs {
		t.Run(name, func(t *testing.T) {
			svc := kv.New(boltStore(t), kv.Options{})
			for i, want := range []string{
				`run 1: ["hi"]; keys last-input, log, runs`,
				`run 2: ["hi","there"]; keys last-input, log, runs`,
			} {
				input := []string{"hi", "there"}[i]
				out, err := waitAgent(t, s.host.Start(p, AgentConfig{Name: "notes", OpenBucket: opener(svc, "notes", "", kv.Policy{})}, input), 60*time.Second)
				if err != nil || out != want {
					t.Fatalf("run %d: %q, %v; want %q", i+1, out, err, want)
				}
			}
		})
	}
}

// TestREADMEKeyValueGuest: the key-value guest of README.md ("Agents that
// remember") is testdata/agents/remember.js (but for the path of sdk/js,
// which a `toolhostd new` project keeps beside its agent): built by both
// JS toolchains, it counts its runs in its bucket and keeps its last input.
func TestREADMEKeyValueGuest(t *testing.T) {
	s := env(t)
	readme, err := os.ReadFile(filepath.Join(s.root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	if i := strings.Index(section, "## Agents that remember"); i >= 0 {
		section = section[i:]
	}
	file, err := os.ReadFile(filepath.Join("testdata", "agents", "remember.js"))
	if err != nil {
		t.Fatal(err)
	}
	if js, want := codeBlock(t, section, "js"), strings.Replace(string(file), "'../../../../sdk/js/toolhost.js'", "'./toolhost.js'", 1); js != want {
		t.Errorf("README.md's key-value guest is not testdata/agents/remember.js:\n%s", js)
	}
	for _, build := range []string{"test-agents", "test-agents-qjs"} {
		t.Run(build, func(t *testing.T) {
			p := s.program(t, build, "remember")
			svc := kv.New(boltStore(t), kv.Options{})
			for i, input := range []string{"hi", "there"} {
				out, err := waitAgent(t, s.host.Start(p, AgentConfig{Name: "notes", OpenBucket: opener(svc, "notes", "", kv.Policy{})}, input), 60*time.Second)
				if want := fmt.Sprintf("run %d", i+1); err != nil || out != want {
					t.Fatalf("run %d: %q, %v; want %q", i+1, out, err, want)
				}
			}
			v, ok, err := mustOpen(t, svc, "notes", "", "notes").Get(t.Context(), "last")
			if err != nil || !ok || string(v) != "there" {
				t.Fatalf("the bucket's last: %q, %v, %v; want the last input", v, ok, err)
			}
		})
	}
}

// codeBlock is the first fenced block of lang in doc.
func codeBlock(t *testing.T, doc, lang string) string {
	t.Helper()
	_, code, ok := strings.Cut(doc, "```"+lang+"\n")
	code, _, ok2 := strings.Cut(code, "```\n")
	if !ok || !ok2 {
		t.Fatalf("no %s code block", lang)
	}
	return code
}
