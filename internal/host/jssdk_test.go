package host

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestJSSDK: sdk/js/toolhost.js inside a component, under both JS
// toolchains. agent() makes a thrown host error run's err as "code:
// message" and anything else thrown its text (without it componentize-js
// traps on a thrown object); Inbox.waitFor holds the envelopes of other
// ids and times out with nothing lost; Inbox.stream follows a chat-stream
// to its chat-done, its deltas (merged or not) adding up to the text.
func TestJSSDK(t *testing.T) {
	for _, dir := range []string{"test-agents", "test-agents-qjs"} {
		t.Run(dir, func(t *testing.T) {
			s := env(t)
			p := s.program(t, dir, "sdkjs")
			for _, tc := range []struct {
				name, input string
				ok, err     string // one of them
			}{
				{"host-error", `{"case":"host-error"}`, "", "not-found: "},
				{"throw-object", `{"case":"throw-object"}`, "", `{"why":"an object"}`},
				{"throw-error", `{"case":"throw-error"}`, "", "plain error"},
				{"return-object", `{"case":"return-object"}`, `{"a":1,"b":[true]}`, ""},
				{"return-nothing", `{"case":"return-nothing"}`, "", ""},
				{"wait-for", `{"case":"wait-for","tooling":"mem"}`, `{"none":null,"held":2,"b":"second","a":"first","heldAfter":0,"third":"third"}`, ""},
				{"stream", `{"case":"stream","provider":"fake","prompt":"echo streamed through the helper"}`,
					`{"deltas":"streamed through the helper","some":true,"content":"streamed through the helper"}`, ""},
			} {
				t.Run(tc.name, func(t *testing.T) {
					out, err := waitAgent(t, s.host.Start(p, AgentConfig{Name: "sdkjs-" + dir + "-" + tc.name}, tc.input), 60*time.Second)
					switch {
					case tc.err != "":
						if err == nil || !strings.HasPrefix(err.Error(), tc.err) && !strings.Contains(err.Error(), ": "+tc.err) {
							t.Errorf("run = %q, %v; want err %q", out, err, tc.err)
						}
						if err != nil && strings.Contains(err.Error(), "trap") {
							t.Errorf("a trap, not run's err: %v", err)
						}
					case err != nil:
						t.Errorf("run: %v", err)
					case tc.ok != "" && !jsonEqual(out, tc.ok), tc.ok == "" && out != "":
						t.Errorf("run = %s, want %s", out, tc.ok)
					}
				})
			}
		})
	}
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// TestJSSDKTypes: sdk/js/types is what scripts/js-types.mjs generates from
// wit/agent.wit today, and the agents that import sdk/js type-check
// against it and toolhost.d.ts (tsc --checkJs: a misspelt method, a wrong
// argument count, a field the WIT does not have fail).
func TestJSSDKTypes(t *testing.T) {
	root := testenv.Root(t)
	node, _ := testenv.Conformance(t)
	check := exec.Command(node, "scripts/js-types.mjs", "--check")
	check.Dir = root
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("js-types --check: %v\n%s", err, out)
	}
	tsc := exec.Command(filepath.Join(root, "node_modules", ".bin", "tsc"), "--noEmit", "--allowJs", "--checkJs", "--strict", "false",
		"--lib", "esnext", "--module", "esnext", "--target", "esnext", "--moduleResolution", "bundler",
		"sdk/js/types/agent.d.ts", "internal/host/testdata/agents/sdkjs.js")
	tsc.Dir = root
	if out, err := tsc.CombinedOutput(); err != nil {
		t.Errorf("tsc: %v\n%s", err, out)
	}
}
