package host

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"

	"go.uber.org/zap/zapcore"
)

// These tests check the rules of the guest contract (toolhost:agent@0.1.0,
// which 0.2.0 keeps) from the guest side: the probe
// (testdata/agents/probe.js built with componentize-js and with
// componentize-qjs, and its Go port testdata/agents-go/probe, and the same
// three as built against 0.1.0, testdata/v0.1.0) runs the steps and reports
// what it saw; every scenario runs on each guest (forGuests) with the same
// assertions. This
// file: the synchronous functions, log and run's err.

func TestProbeSynchronous(t *testing.T) {
	forGuests(t, func(t *testing.T, g guest) {
		s := env(t)
		cases := []struct {
			name   string
			opts   probeOpts
			steps  []step
			want   []string
			detail func(t *testing.T, rs []stepResult)
		}{
			{
				name: "get kind name",
				opts: probeOpts{grants: []string{"mem", "everything"}},
				steps: []step{
					{"op": "get", "name": "mem", "as": "t"},
					{"op": "kind", "h": "t"},
					{"op": "name", "h": "t"},
					{"op": "get", "name": "mem", "as": "t2"},
					{"op": "name", "h": "t2"},
					{"op": "get", "name": "everything", "as": "e"},
					{"op": "name", "h": "e"},
					{"op": "get", "name": "no-such-tooling"},
					{"op": "get", "name": "mem-short"},
				},
				want: []string{`"t"`, `"mcp"`, `"mem"`, `"t2"`, `"mem"`, `"e"`, `"everything"`, "err not-found", "err denied"},
			},
			{
				name: "list-tools",
				steps: []step{
					{"op": "get", "name": "mem", "as": "t"},
					{"op": "list-tools", "h": "t"},
				},
				want: []string{`"t"`, "*"},
				detail: func(t *testing.T, rs []stepResult) {
					tools := okAs[[]struct {
						Name        string  `json:"name"`
						Description *string `json:"description"`
						InputSchema string  `json:"inputSchema"`
					}](t, rs[1])
					seen := map[string]bool{}
					for _, tl := range tools {
						seen[tl.Name] = true
						var schema map[string]any
						if err := json.Unmarshal([]byte(tl.InputSchema), &schema); err != nil || schema["type"] != "object" {
							t.Errorf("tool %s: input-schema %q is not a JSON object schema (%v)", tl.Name, tl.InputSchema, err)
						}
						if tl.Description == nil || *tl.Description == "" {
							t.Errorf("tool %s: no description", tl.Name)
						}
					}
					// The server's pages hold 3 tools: all 4 means the host
					// followed the cursor.
					for _, n := range []string{"echo", "fail", "slow", "gate"} {
						if !seen[n] {
							t.Errorf("list-tools lacks %s: %+v", n, tools)
						}
					}
				},
			},
			{
				name: "call-tool-blocking",
				steps: []step{
					{"op": "get", "name": "mem", "as": "t"},
					{"op": "call-tool-blocking", "h": "t", "tool": "echo", "args": map[string]any{"text": "hi"}},
					{"op": "call-tool-blocking", "h": "t", "tool": "fail", "args": map[string]any{"text": "x"}},
					{"op": "call-tool-blocking", "h": "t", "tool": "echo", "raw": "not json"},
					{"op": "call-tool-blocking", "h": "t", "tool": "echo", "raw": "[1,2]"},
					{"op": "call-tool-blocking", "h": "t", "tool": "no-such-tool", "args": map[string]any{}},
				},
				want: []string{`"t"`, "*", "*", "err invalid-argument", "err invalid-argument", "err *"},
				detail: func(t *testing.T, rs []stepResult) {
					type tr struct{ Name, Arguments, Value string }
					r := okAs[tr](t, rs[1])
					if text, isErr := valueText(r.Value); r.Name != "echo" || r.Arguments != `{"text":"hi"}` || text != "hi" || isErr {
						t.Errorf("echo result %+v", r)
					}
					r = okAs[tr](t, rs[2])
					if text, isErr := valueText(r.Value); r.Name != "fail" || text != "failed: x" || !isErr {
						t.Errorf("an isError result is a success carrying isError: %+v", r)
					}
					if rs[5].Err.Message == "" {
						t.Error("unknown tool: empty message")
					}
				},
			},
			{
				name: "call-tool argument checks",
				steps: []step{
					{"op": "get", "name": "mem", "as": "t"},
					{"op": "call-tool", "h": "t", "tool": "echo", "raw": "{broken"},
					{"op": "call-tool", "h": "t", "tool": "echo", "raw": `"a string"`},
					{"op": "call-tool", "h": "t", "tool": "echo", "raw": ""},
					{"op": "pending"},
					{"op": "recv", "timeout": 100},
				},
				want: []string{`"t"`, "err invalid-argument", "err invalid-argument", "err invalid-argument", "0", "null"},
			},
			{
				name: "unknown ids",
				steps: []step{
					{"op": "get", "name": "mem", "as": "t"},
					{"op": "is-open", "h": "t", "id": "00000000-0000-0000-0000-000000000001"},
					{"op": "cancel", "h": "t", "id": "00000000-0000-0000-0000-000000000001"},
					{"op": "cancel", "h": "t", "id": "not a uuid"},
					{"op": "unsubscribe", "h": "t", "id": "00000000-0000-0000-0000-000000000001"},
					{"op": "unsubscribe-list", "h": "t", "id": "00000000-0000-0000-0000-000000000001"},
					{"op": "try-recv"},
					{"op": "pending"},
				},
				want: []string{`"t"`, "false", "false", "false", "false", "false", "null", "0"},
			},
			{
				name: "busy counts open calls",
				opts: probeOpts{capacity: 2},
				steps: []step{
					{"op": "get", "name": "mem", "as": "t"},
					{"op": "call-tool", "h": "t", "tool": "slow", "args": map[string]any{"tag": "busy-1"}, "as": "a"},
					{"op": "call-tool", "h": "t", "tool": "slow", "args": map[string]any{"tag": "busy-2"}, "as": "b"},
					{"op": "call-tool", "h": "t", "tool": "echo", "args": map[string]any{"text": "x"}},
					{"op": "cancel", "h": "t", "id": "a"},
					{"op": "call-tool", "h": "t", "tool": "echo", "args": map[string]any{"text": "room"}, "as": "c"},
					{"op": "recv-until", "id": "c", "timeout": 20000},
					{"op": "cancel", "h": "t", "id": "b"},
				},
				want: []string{`"t"`, `"a"`, `"b"`, "err busy", "true", `"c"`, "*", "true"},
				detail: func(t *testing.T, rs []stepResult) {
					got := okAs[struct {
						Got     envelope   `json:"got"`
						Skipped []envelope `json:"skipped"`
					}](t, rs[6])
					if envSummary(got.Got) != "c tool-result echo room" || len(got.Skipped) != 0 {
						t.Errorf("recv-until c: %+v", got)
					}
				},
			},
			{
				name: "busy counts undelivered envelopes",
				opts: probeOpts{capacity: 1},
				steps: []step{
					{"op": "get", "name": "mem", "as": "t"},
					{"op": "call-tool", "h": "t", "tool": "echo", "args": map[string]any{"text": "one"}, "as": "e"},
					{"op": "call-tool", "h": "t", "tool": "echo", "args": map[string]any{"text": "two"}},
					{"op": "recv", "timeout": 20000},
					{"op": "call-tool", "h": "t", "tool": "echo", "args": map[string]any{"text": "three"}, "as": "f"},
					{"op": "recv", "timeout": 20000},
				},
				want: []string{`"t"`, `"e"`, "err busy", "e tool-result echo one", `"f"`, "f tool-result echo three"},
			},
			{
				name: "read-resource encoding",
				steps: []step{
					{"op": "get", "name": "mem", "as": "t"},
					{"op": "read-resource", "h": "t", "uri": "test://text"},
					{"op": "read-resource", "h": "t", "uri": "test://markdown"},
					{"op": "read-resource", "h": "t", "uri": "test://notype"},
					{"op": "read-resource", "h": "t", "uri": "test://json"},
					{"op": "read-resource", "h": "t", "uri": "test://blob"},
					{"op": "read-resource", "h": "t", "uri": "test://blobtext"},
					{"op": "read-resource", "h": "t", "uri": "test://multi"},
					{"op": "read-resource", "h": "t", "uri": "test://firstof"},
					{"op": "read-resource", "h": "t", "uri": "test://no-such-resource"},
				},
				want: []string{`"t"`, "*", "*", "*", "*", "*", "*", "*", "*", "err *"},
				detail: func(t *testing.T, rs []stepResult) {
					type rc struct {
						URI      string  `json:"uri"`
						MIMEType *string `json:"mimeType"`
						Content  string  `json:"content"`
					}
					b64 := base64.StdEncoding.EncodeToString
					want := []struct {
						uri, mime, content string
					}{
						{"test://text", "text/plain", "hello, text"},
						{"test://markdown", "text/markdown", "# title"},
						{"test://notype", "", "no mime type"},
						{"test://json", "application/json", b64([]byte(`{"a":1}`))},
						{"test://blob", "application/octet-stream", b64([]byte{0, 1, 2, 0xff})},
						{"test://blobtext", "text/plain", "héllo from a blob"},
						{"test://multi", "text/plain", "me"},
						{"test://firstof/a", "text/plain", "first"},
					}
					for i, w := range want {
						got := okAs[rc](t, rs[i+1])
						mime := ""
						if got.MIMEType != nil {
							mime = *got.MIMEType
						}
						if got.URI != w.uri || mime != w.mime || got.Content != w.content {
							t.Errorf("read %s: got %+v (mime %q), want %s %q %q", w.uri, got, mime, w.uri, w.mime, w.content)
						}
					}
				},
			},
			{
				name: "list-resources",
				steps: []step{
					{"op": "get", "name": "mem", "as": "t"},
					{"op": "list-resources", "h": "t"},
				},
				want: []string{`"t"`, "*"},
				detail: func(t *testing.T, rs []stepResult) {
					list := okAs[[]struct {
						URI      string  `json:"uri"`
						Name     string  `json:"name"`
						MIMEType *string `json:"mimeType"`
					}](t, rs[1])
					byURI := map[string]*string{}
					for _, r := range list {
						byURI[r.URI] = r.MIMEType
					}
					if m, ok := byURI["test://json"]; !ok || m == nil || *m != "application/json" {
						t.Errorf("test://json missing or without its mime type: %+v", list)
					}
					if m, ok := byURI["test://notype"]; !ok || m != nil {
						t.Errorf("test://notype missing or with a mime type: %+v", list)
					}
					// Pages of 3: every resource means every cursor followed.
					for _, u := range append([]string{"test://text", "test://blob", "test://multi", "test://firstof"}, subURIs...) {
						if _, ok := byURI[u]; !ok {
							t.Errorf("list-resources lacks %s (%d listed)", u, len(list))
						}
					}
				},
			},
			{
				name: "subscribe without resources.subscribe",
				steps: []step{
					{"op": "get", "name": "nosub", "as": "t"},
					{"op": "subscribe", "h": "t", "uri": "test://sub/basic"},
					{"op": "subscribe-list", "h": "t", "as": "l"},
					{"op": "unsubscribe-list", "h": "t", "id": "l"},
				},
				want: []string{`"t"`, "err unsupported", `"l"`, "true"},
			},
			{
				name: "a dropped handle",
				steps: []step{
					{"op": "get", "name": "mem", "as": "t"},
					{"op": "get", "name": "mem", "as": "u"},
					{"op": "drop", "h": "t"},
					{"op": "call-tool-blocking", "h": "u", "tool": "echo", "args": map[string]any{"text": "still here"}},
				},
				want: []string{`"t"`, `"u"`, "true", "*"},
			},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				o := tc.opts
				o.guest = g
				rs := s.probe(t, o, tc.steps...)
				checkSteps(t, rs, tc.want...)
				if tc.detail != nil {
					tc.detail(t, rs)
				}
			})
		}
	})
}

func TestProbeLog(t *testing.T) {
	forGuests(t, func(t *testing.T, g guest) {
		s := env(t)
		rs := s.probe(t, probeOpts{guest: g, name: "logger"},
			step{"op": "log", "level": "warn", "message": "a warning from the guest"},
			step{"op": "log", "level": "debug", "message": "a debug line from the guest"},
		)
		checkSteps(t, rs, "true", "true")
		for _, w := range []struct {
			msg   string
			level zapcore.Level
		}{{"a warning from the guest", zapcore.WarnLevel}, {"a debug line from the guest", zapcore.DebugLevel}} {
			found := false
			for _, e := range s.logs.FilterMessage(w.msg).All() {
				if e.Level == w.level && e.ContextMap()["agent"] == "logger" {
					found = true
				}
			}
			if !found {
				t.Errorf("no %v log line %q with agent=logger", w.level, w.msg)
			}
		}
	})
}

func TestProbeFail(t *testing.T) {
	forGuests(t, func(t *testing.T, g guest) {
		s := env(t)
		a := s.startProbe(t, probeOpts{guest: g}, step{"op": "fail", "message": "guest gave up"})
		<-a.Done()
		_, err := a.Wait()
		var re *RunError
		if !errors.As(err, &re) || re.Message != "guest gave up" {
			t.Fatalf("err = %v (%T), want RunError \"guest gave up\"", err, err)
		}
	})
}
