package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// docFiles are README.md and docs/*.md, relative to the repository root.
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(testenv.Root(t), "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md (%v)", err)
	}
	files := []string{"README.md"}
	for _, d := range docs {
		files = append(files, filepath.Join("docs", filepath.Base(d)))
	}
	return files
}

// readDoc is the text of a file of docFiles.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Root(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// proseLines calls f with each line of a Markdown text outside its code
// blocks (trimmed) and its line number.
func proseLines(text string, f func(n int, line string)) {
	inCode := false
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		if !inCode {
			f(i+1, line)
		}
	}
}

// placeholder is a line that is nothing but an upper-case token: text
// left for a measurement (TOOLCHAIN_TABLE) instead of the measurement.
var placeholder = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$`)

// TestDocsHaveNoPlaceholders: every line of README.md and docs/*.md
// outside code blocks is prose or a table, never a token standing for one.
func TestDocsHaveNoPlaceholders(t *testing.T) {
	for _, name := range docFiles(t) {
		proseLines(readDoc(t, name), func(n int, line string) {
			if placeholder.MatchString(line) {
				t.Errorf("%s:%d: placeholder %q instead of its content", name, n, line)
			}
		})
	}
}

var (
	mdLink      = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	notInAnchor = regexp.MustCompile(`[^a-z0-9 _-]`)
)

// anchors are the GitHub anchors of a Markdown text's headings: lower
// case, punctuation dropped, spaces as hyphens.
func anchors(text string) map[string]bool {
	a := map[string]bool{}
	proseLines(text, func(_ int, line string) {
		if h := strings.TrimLeft(line, "#"); h != line && strings.HasPrefix(h, " ") {
			slug := notInAnchor.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), "")
			a[strings.ReplaceAll(slug, " ", "-")] = true
		}
	})
	return a
}

// TestDocLinks: every relative link of README.md and docs/*.md names a
// file of the repository, and its #anchor a heading of that file.
func TestDocLinks(t *testing.T) {
	root := testenv.Root(t)
	links := 0
	for _, name := range docFiles(t) {
		proseLines(readDoc(t, name), func(n int, line string) {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				file, anchor, _ := strings.Cut(target, "#")
				path := filepath.Join(filepath.Dir(name), file)
				if file == "" {
					path = name
				}
				if _, err := os.Stat(filepath.Join(root, path)); err != nil {
					t.Errorf("%s:%d: link %s: %v", name, n, target, err)
					continue
				}
				if anchor != "" && !anchors(readDoc(t, path))[anchor] {
					t.Errorf("%s:%d: link %s: %s has no heading #%s", name, n, target, path, anchor)
				}
			}
		})
	}
	if links < 20 {
		t.Errorf("only %d relative links in README.md and docs/*.md: the link pattern no longer finds them", links)
	}
}

// docBlocks are the code blocks of the section of a Markdown text under
// heading (up to the next heading of the same level), by language.
func docBlocks(t *testing.T, name, heading string) map[string][]string {
	t.Helper()
	_, sec, ok := strings.Cut(readDoc(t, name), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", name, heading)
	}
	level, _, _ := strings.Cut(heading, " ")
	sec, _, _ = strings.Cut(sec, "\n"+level+" ")
	blocks := map[string][]string{}
	for {
		_, rest, ok := strings.Cut(sec, "```")
		if !ok {
			return blocks
		}
		lang, rest, _ := strings.Cut(rest, "\n")
		code, rest, ok := strings.Cut(rest, "```\n")
		if !ok {
			t.Fatalf("%s %q: an unterminated %s block", name, heading, lang)
		}
		blocks[lang] = append(blocks[lang], code)
		sec = rest
	}
}

// TestREADMEAgent follows the README's "An agent": toolhostd new, the
// agent.js and toolhostd.toml it shows written into the project, toolhostd
// build and toolhostd run, whose output must be what the README's comment
// says. The toolhostd.toml shown must be valid, run the npx server `new`
// writes, and is what serve would run; run here uses the same server from
// node_modules (no network), and serve is not started.
func TestREADMEAgent(t *testing.T) {
	seedToolchain(t)
	blocks := docBlocks(t, "README.md", "## An agent")
	if len(blocks["sh"]) != 2 || len(blocks["js"]) != 1 || len(blocks["toml"]) != 1 {
		t.Fatalf("README.md's agent: want two sh blocks, one js and one toml, have %d, %d, %d", len(blocks["sh"]), len(blocks["js"]), len(blocks["toml"]))
	}
	if lines := strings.Count(blocks["js"][0], "\n"); lines > 25 {
		t.Errorf("README.md's agent has %d lines; the front door shows a short one", lines)
	}
	t.Chdir(t.TempDir())
	t.Setenv("TOOLHOSTD_CONFIG", "")
	ran := 0
	for _, line := range strings.Split(blocks["sh"][0]+blocks["sh"][1], "\n") {
		cmd, comment, _ := strings.Cut(line, "#")
		f := strings.Fields(cmd)
		comment = strings.TrimSpace(comment)
		switch {
		case len(f) == 0:
			continue
		case f[0] == "cd":
			t.Chdir(f[1])
			// The README shows agent.js and toolhostd.toml in the project.
			written, err := os.ReadFile("toolhostd.toml")
			if err != nil {
				t.Fatal(err)
			}
			args := regexp.MustCompile(`(?m)^args = .*$`).FindString(blocks["toml"][0])
			if args == "" || !strings.Contains(string(written), "\n"+args+"\n") {
				t.Errorf("README.md's toolhostd.toml runs %q; toolhostd new writes\n%s", args, written)
			}
			for file, text := range map[string]string{"agent.js": blocks["js"][0], "toolhostd.toml": blocks["toml"][0]} {
				if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// Valid as written (its component is built by the next command).
			if code, out, errs := runCLI(t, "config", "validate", "--no-files", "toolhostd.toml"); code != 0 || !strings.Contains(out, "1 tooling, 1 agent") {
				t.Errorf("config validate of README.md's toolhostd.toml: exit %d\n%s%s", code, out, errs)
			}
		case f[0] != "toolhostd":
			t.Fatalf("README.md's agent: %q is not a toolhostd command", line)
		case slices.Index(f, "serve") >= 0:
			// Not started: its config was validated above.
		default:
			if i := slices.Index(f, "--config"); i >= 0 {
				f[i+1] = everythingConfig(t)
			}
			code, out, errs := runCLI(t, f[1:]...)
			if code != 0 {
				t.Fatalf("%s: exit %d\n%s%s", cmd, code, out, errs)
			}
			if want, ok := strings.CutPrefix(comment, "prints: "); ok && out != want+"\n" {
				t.Errorf("%s: stdout %q, the README says %q", cmd, out, want)
			}
			ran++
		}
	}
	if ran != 3 {
		t.Errorf("ran %d of README.md's toolhostd commands, want 3 (new, build, run)", ran)
	}
}
