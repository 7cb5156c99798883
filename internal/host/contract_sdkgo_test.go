package host

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestGoSDKEdges: the Go SDK answers, against the real host, where the
// canonical ABI would trap or a handle is closed (the probe's sdk-edges op,
// testdata/agents-go/probe/edges.go): strings that are not valid UTF-8 are
// refused with invalid-argument before the call and sanitized in the log;
// negative and past timeouts do not wait; a context ends a receive; an
// envelope and a blocking result larger than the reserved region (made
// large by whitespace in the arguments, which the tool-result returns as
// given) become errors (the envelope's under its id), and after Reserve the
// same result fits; after Close every method answers without a trap.
func TestGoSDKEdges(t *testing.T) {
	s := env(t)
	rs := s.probe(t, probeOpts{guest: guestGo, name: "sdk-edges"},
		step{"op": "sdk-edges", "name": "mem"},
		step{"op": "pending"},
	)
	checkSteps(t, rs, "*", "0")
	got := okAs[map[string]any](t, rs[0])
	want := map[string]any{
		"get-invalid-utf8":           "invalid-argument",
		"get-provider-invalid-utf8":  "invalid-argument",
		"call-invalid-utf8-name":     "invalid-argument",
		"call-invalid-utf8-json":     "invalid-argument",
		"read-invalid-utf8-uri":      "invalid-argument",
		"subscribe-invalid-utf8-uri": "invalid-argument",
		"log-invalid-utf8":           true,
		"recv-negative":              false,
		"recv-deadline-past":         false,
		"recv-context-timeout":       true,
		"recv-context-cancel":        true,
		"too-large-envelope":         true,
		"too-large-result":           true,
		"too-large-retry":            true,
		"kind-after":                 "mcp",
		"closed": map[string]any{
			"kind": "", "name": "", "is-open": false, "cancel": false, "unsubscribe": false,
			"unsubscribe-list": false, "list-tools": true, "close-again": true,
		},
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		t.Errorf("the SDK answered\n%s", g)
	}
	logged := false
	for _, e := range s.logs.FilterMessage("sdk-edges: invalid \uFFFD UTF-8").All() {
		logged = logged || e.ContextMap()["agent"] == "sdk-edges"
	}
	if !logged {
		var msgs []string
		for _, e := range s.logs.All() {
			if strings.HasPrefix(e.Message, "sdk-edges") {
				msgs = append(msgs, e.Message)
			}
		}
		t.Errorf("the log line with invalid UTF-8 was not logged sanitized: %q", msgs)
	}
}
