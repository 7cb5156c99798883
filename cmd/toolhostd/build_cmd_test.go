package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/wit"
)

// TestBuildHelpNamesTheWorld: build --help names the WIT package the
// binary embeds (it said toolhost:agent@0.2.0 after 0.3.0 shipped).
func TestBuildHelpNamesTheWorld(t *testing.T) {
	pkg := wit.Package()
	if !strings.HasPrefix(pkg, "toolhost:agent@") {
		t.Fatalf("wit.Package() = %q, want toolhost:agent@VERSION", pkg)
	}
	var out, errb bytes.Buffer
	if code := execute([]string{"build", "--help"}, &out, &errb); code != 0 {
		t.Fatalf("build --help: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "("+pkg+", embedded in the binary)") {
		t.Errorf("build --help does not name %s:\n%s", pkg, out.String())
	}
}
