package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// placeholder is a line that is nothing but an upper-case token: text
// left for a measurement (TOOLCHAIN_TABLE) instead of the measurement.
var placeholder = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$`)

// TestREADMEHasNoPlaceholders: every line of README.md outside code blocks
// is prose or a table, never a token standing for one.
func TestREADMEHasNoPlaceholders(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testenv.Root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	inCode := false
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		if !inCode && placeholder.MatchString(line) {
			t.Errorf("README.md:%d: placeholder %q instead of its content", i+1, line)
		}
	}
}
