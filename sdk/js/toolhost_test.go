package js

import (
	"os/exec"
	"testing"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestToolhostJS runs testdata/toolhost_test.mjs: toolhost.js's Inbox,
// serve, replyOf, Reply.streamChat and Toolbox against a queue of
// envelopes, with the host's modules stubbed (testdata/fakehost.mjs). The
// same code inside a component is the host's TestJSSDK.
func TestToolhostJS(t *testing.T) {
	node, _ := testenv.Conformance(t)
	cmd := exec.Command(node, "--import", "./testdata/fakehost.mjs", "testdata/toolhost_test.mjs")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
