package host

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	wt "github.com/toolhostd/toolhostd/internal/host/wasmtime"
)

// These tests check the rules of the guest contract (toolhost:agent@0.1.0)
// from the guest side: a JS agent built with componentize-js (probe.js)
// runs the steps and reports what it saw.

func TestProbeSynchronous(t *testing.T) {
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
			rs := s.probe(t, tc.opts, tc.steps...)
			checkSteps(t, rs, tc.want...)
			if tc.detail != nil {
				tc.detail(t, rs)
			}
		})
	}
}

func TestProbeCallAndRecvByID(t *testing.T) {
	s := env(t)
	a := s.startProbe(t, probeOpts{},
		step{"op": "get", "name": "mem", "as": "t"},
		step{"op": "call-tool", "h": "t", "tool": "gate", "args": map[string]any{"tag": "recv-by-id"}, "as": "g"},
		step{"op": "call-tool", "h": "t", "tool": "echo", "args": map[string]any{"text": "a"}, "as": "a"},
		step{"op": "call-tool", "h": "t", "tool": "fail", "args": map[string]any{"text": "b"}, "as": "b"},
		step{"op": "is-open", "h": "t", "id": "g"},
		step{"op": "call-tool-blocking", "h": "t", "tool": "gate", "args": map[string]any{"tag": "recv-by-id-hold"}},
		step{"op": "recv-until", "id": "g", "timeout": 20000},
		step{"op": "is-open", "h": "t", "id": "g"},
		step{"op": "cancel", "h": "t", "id": "g"},
		step{"op": "pending"},
		step{"op": "try-recv"},
	)
	s.mem.enterGate(t, "recv-by-id")
	s.mem.enterGate(t, "recv-by-id-hold")
	// Both other results are in before g's: the guest's recv-until skips
	// them (in arrival order) to reach g.
	eventually(t, "two envelopes", func() bool { return a.Inbox().Pending() == 2 })
	s.mem.openGate("recv-by-id")
	eventually(t, "g's envelope", func() bool { return a.Inbox().Pending() == 3 })
	s.mem.openGate("recv-by-id-hold")
	rs := finish(t, a)
	checkSteps(t, rs, `"t"`, `"g"`, `"a"`, `"b"`, "true", "*", "*", "false", "false", "0", "null")
	got := okAs[struct {
		Got     envelope   `json:"got"`
		Skipped []envelope `json:"skipped"`
	}](t, rs[6])
	if envSummary(got.Got) != "g tool-result gate passed recv-by-id" {
		t.Errorf("recv-until g got %s", envSummary(got.Got))
	}
	// a and b arrive in the order they complete.
	var skipped []string
	for _, e := range got.Skipped {
		skipped = append(skipped, envSummary(e))
	}
	slices.Sort(skipped)
	if strings.Join(skipped, "; ") != "a tool-result echo a; b tool-result fail failed: b (isError)" {
		t.Errorf("skipped %q", skipped)
	}
}

func TestProbeCancel(t *testing.T) {
	s := env(t)
	a := s.startProbe(t, probeOpts{},
		step{"op": "get", "name": "mem", "as": "t"},
		step{"op": "call-tool", "h": "t", "tool": "slow", "args": map[string]any{"tag": "cancel-open"}, "as": "slow"},
		step{"op": "call-tool", "h": "t", "tool": "echo", "args": map[string]any{"text": "e1"}, "as": "e1"},
		step{"op": "call-tool", "h": "t", "tool": "echo", "args": map[string]any{"text": "e2"}, "as": "e2"},
		step{"op": "call-tool-blocking", "h": "t", "tool": "gate", "args": map[string]any{"tag": "cancel-1"}},
		step{"op": "is-open", "h": "t", "id": "slow"},
		step{"op": "cancel", "h": "t", "id": "slow"},
		step{"op": "is-open", "h": "t", "id": "slow"},
		step{"op": "cancel", "h": "t", "id": "slow"},
		step{"op": "pending"},
		step{"op": "cancel", "h": "t", "id": "e1"}, // delivered to the inbox, not received
		step{"op": "pending"},
		step{"op": "recv", "timeout": 0},
		step{"op": "cancel", "h": "t", "id": "e2"}, // already received
		step{"op": "call-tool-blocking", "h": "t", "tool": "gate", "args": map[string]any{"tag": "cancel-2"}},
		step{"op": "recv", "timeout": 300},
		step{"op": "pending"},
	)
	s.mem.enterGate(t, "cancel-1")
	wait(t, signal(&s.mem.slowStarted, "cancel-open"), "the slow call to reach the server")
	eventually(t, "both echo results", func() bool { return a.Inbox().Pending() == 2 })
	s.mem.openGate("cancel-1")
	s.mem.enterGate(t, "cancel-2")
	// The server saw notifications/cancelled: go-sdk ended the handler's
	// context.
	wait(t, signal(&s.mem.slowCancelled, "cancel-open"), "the server to see the cancellation")
	s.mem.openGate("cancel-2")
	checkSteps(t, finish(t, a),
		`"t"`, `"slow"`, `"e1"`, `"e2"`, "*",
		"true", "true", "false", "false", "2",
		"true", "1", "e2 tool-result echo e2", "false",
		"*", "null", "0")
}

func TestProbeCallTimeout(t *testing.T) {
	s := env(t)
	rs := s.probe(t, probeOpts{},
		step{"op": "get", "name": "mem-short", "as": "t"},
		step{"op": "call-tool-blocking", "h": "t", "tool": "slow", "args": map[string]any{"tag": "timeout-blocking"}},
		step{"op": "call-tool", "h": "t", "tool": "slow", "args": map[string]any{"tag": "timeout-async"}, "as": "c"},
		step{"op": "recv", "timeout": 20000},
		step{"op": "is-open", "h": "t", "id": "c"},
	)
	checkSteps(t, rs, `"t"`, "err timeout", `"c"`, "c error timeout", "false")
	wait(t, signal(&s.mem.slowCancelled, "timeout-blocking"), "the server to see the blocking call cancelled")
	wait(t, signal(&s.mem.slowCancelled, "timeout-async"), "the server to see the async call cancelled")
}

func TestProbeSubscribe(t *testing.T) {
	s := env(t)
	const uri = "test://sub/basic"
	a := s.startProbe(t, probeOpts{},
		step{"op": "get", "name": "mem", "as": "t"},
		step{"op": "subscribe", "h": "t", "uri": uri, "as": "s"},
		step{"op": "subscribe", "h": "t", "uri": uri, "as": "s2"},
		step{"op": "subscribe-list", "h": "t", "as": "l"},
		step{"op": "call-tool-blocking", "h": "t", "tool": "gate", "args": map[string]any{"tag": "sub-1"}},
		step{"op": "recv", "timeout": 20000},
		step{"op": "recv", "timeout": 20000},
		step{"op": "recv-until", "id": "l", "timeout": 20000},
		step{"op": "unsubscribe", "h": "t", "id": "s"},
		step{"op": "unsubscribe", "h": "t", "id": "s"},
		step{"op": "unsubscribe-list", "h": "t", "id": "l"},
		step{"op": "unsubscribe-list", "h": "t", "id": "l"},
		step{"op": "call-tool-blocking", "h": "t", "tool": "gate", "args": map[string]any{"tag": "sub-2"}},
		step{"op": "recv", "timeout": 20000},
		step{"op": "recv", "timeout": 300},
		step{"op": "unsubscribe", "h": "t", "id": "s2"},
	)
	s.mem.enterGate(t, "sub-1")
	if n := counter(&s.mem.subscribes, uri).Load(); n != 1 {
		t.Fatalf("server saw %d subscribes for two subscriptions, want 1", n)
	}
	s.mem.update(t, uri, "v1")
	eventually(t, "the update in both subscriptions", func() bool { return a.Inbox().Pending() == 2 })
	s.mem.addResource("test://added/subscribe", "new") // list_changed
	eventually(t, "the list update", func() bool { return a.Inbox().Pending() == 3 })
	s.mem.openGate("sub-1")
	s.mem.enterGate(t, "sub-2")
	if n := counter(&s.mem.unsubscribes, uri).Load(); n != 0 {
		t.Fatalf("server saw %d unsubscribes with one subscription left", n)
	}
	s.mem.update(t, uri, "v2")
	eventually(t, "the update for s2", func() bool { return a.Inbox().Pending() == 1 })
	s.mem.addResource("test://added/subscribe-2", "new") // no envelope: l ended
	s.mem.openGate("sub-2")
	rs := finish(t, a)
	checkSteps(t, rs, `"t"`, `"s"`, `"s2"`, `"l"`, "*",
		"*", "*", "*",
		"true", "false", "true", "false", "*",
		"s2 resource-updated test://sub/basic=v2", "null", "true")
	// One envelope per subscription, in fan-out order (unspecified).
	u := []string{envSummary(okAs[envelope](t, rs[5])), envSummary(okAs[envelope](t, rs[6]))}
	slices.Sort(u)
	if u[0] != "s resource-updated test://sub/basic=v1" || u[1] != "s2 resource-updated test://sub/basic=v1" {
		t.Errorf("updates %q, want v1 for s and for s2", u)
	}
	got := okAs[struct {
		Got envelope `json:"got"`
	}](t, rs[7])
	if got.Got.ID != "l" || got.Got.Tag != "resource-list-updated" || !strings.Contains(string(got.Got.Val), "test://added/subscribe") {
		t.Errorf("list update %+v", got.Got)
	}
	eventually(t, "the MCP unsubscribe after the last subscription", func() bool {
		return counter(&s.mem.unsubscribes, uri).Load() == 1
	})
}

// TestProbeCoalescing: several updates while the guest does not recv give
// one envelope with the newest content.
func TestProbeCoalescing(t *testing.T) {
	s := env(t)
	const uri = "test://sub/coalesce"
	a := s.startProbe(t, probeOpts{},
		step{"op": "get", "name": "mem", "as": "t"},
		step{"op": "subscribe", "h": "t", "uri": uri, "as": "s"},
		step{"op": "subscribe-list", "h": "t", "as": "l"},
		step{"op": "call-tool", "h": "t", "tool": "echo", "args": map[string]any{"text": "between"}, "as": "e"},
		step{"op": "call-tool-blocking", "h": "t", "tool": "gate", "args": map[string]any{"tag": "coalesce"}},
		step{"op": "pending"},
		step{"op": "recv", "timeout": 0},
		step{"op": "recv", "timeout": 0},
		step{"op": "recv", "timeout": 0},
		step{"op": "recv", "timeout": 200},
	)
	s.mem.enterGate(t, "coalesce")
	eventually(t, "the echo result", func() bool { return a.Inbox().Pending() == 1 })
	s.mem.update(t, uri, "u1")
	eventually(t, "the first update", func() bool { return a.Inbox().Pending() == 2 })
	coalesced := func(n int) func() bool {
		return func() bool { return a.Inbox().Stats().Coalesced == uint64(n) }
	}
	for i, text := range []string{"u2", "u3", "u4"} {
		s.mem.update(t, uri, text)
		eventually(t, "a coalesced update", coalesced(i+1))
	}
	s.mem.addResource("test://added/coalesce-1", "x")
	eventually(t, "the first list update", func() bool { return a.Inbox().Pending() == 3 })
	s.mem.addResource("test://added/coalesce-2", "x")
	eventually(t, "a coalesced list update", coalesced(4))
	s.mem.openGate("coalesce")
	rs := finish(t, a)
	// Arrival order is kept (an update replaces its payload in place); the
	// newest content wins; the tool result is untouched.
	checkSteps(t, rs, `"t"`, `"s"`, `"l"`, `"e"`, "*", "3",
		"e tool-result echo between", "s resource-updated test://sub/coalesce=u4", "l resource-list-updated *", "null")
	list := okAs[envelope](t, rs[8])
	if !strings.Contains(string(list.Val), "test://added/coalesce-2") {
		t.Errorf("the list update does not carry the newest list: %s", list.Val)
	}
}

// TestProbeHandleDrop: dropping a handle (jco's Symbol.dispose) cancels its
// calls and ends its subscriptions, on the server too.
func TestProbeHandleDrop(t *testing.T) {
	s := env(t)
	const uri = "test://sub/drop"
	a := s.startProbe(t, probeOpts{},
		step{"op": "get", "name": "mem", "as": "t"},
		step{"op": "get", "name": "mem", "as": "u"},
		step{"op": "call-tool", "h": "t", "tool": "slow", "args": map[string]any{"tag": "drop"}, "as": "c"},
		step{"op": "subscribe", "h": "t", "uri": uri, "as": "s"},
		step{"op": "call-tool-blocking", "h": "u", "tool": "gate", "args": map[string]any{"tag": "drop-1"}},
		step{"op": "drop", "h": "t"},
		step{"op": "is-open", "h": "u", "id": "c"},
		step{"op": "call-tool-blocking", "h": "u", "tool": "gate", "args": map[string]any{"tag": "drop-2"}},
		step{"op": "recv", "timeout": 300},
		step{"op": "pending"},
	)
	s.mem.enterGate(t, "drop-1")
	wait(t, signal(&s.mem.slowStarted, "drop"), "the slow call to start")
	s.mem.openGate("drop-1")
	s.mem.enterGate(t, "drop-2")
	wait(t, signal(&s.mem.slowCancelled, "drop"), "the server to see the dropped handle's call cancelled")
	eventually(t, "the MCP unsubscribe", func() bool { return counter(&s.mem.unsubscribes, uri).Load() == 1 })
	s.mem.update(t, uri, "after drop")
	s.mem.openGate("drop-2")
	checkSteps(t, finish(t, a), `"t"`, `"u"`, `"c"`, `"s"`, "*", "true", "false", "*", "null", "0")
}

// TestProbeShutdown: Stop gives the guest the shutdown envelope (the zero
// uuid), fails its blocking call with cancelled, and recv then returns
// none at once.
func TestProbeShutdown(t *testing.T) {
	s := env(t)
	a := s.startProbe(t, probeOpts{grace: 20 * time.Second},
		step{"op": "get", "name": "mem", "as": "t"},
		step{"op": "call-tool", "h": "t", "tool": "slow", "args": map[string]any{"tag": "shutdown"}, "as": "c"},
		step{"op": "call-tool-blocking", "h": "t", "tool": "gate", "args": map[string]any{"tag": "shutdown"}},
		step{"op": "recv"},
		step{"op": "recv"},
		step{"op": "recv", "timeout": 10000},
		step{"op": "try-recv"},
		step{"op": "pending"},
		step{"op": "call-tool-blocking", "h": "t", "tool": "echo", "args": map[string]any{"text": "late"}},
	)
	s.mem.enterGate(t, "shutdown")
	wait(t, signal(&s.mem.slowStarted, "shutdown"), "the slow call to start")
	start := time.Now()
	a.Stop()
	rs := finish(t, a)
	checkSteps(t, rs, `"t"`, `"c"`, "err cancelled",
		"00000000-0000-0000-0000-000000000000 shutdown", "null", "null", "null", "0", "err cancelled")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("recv after shutdown waited: the agent took %v to finish", d)
	}
	wait(t, signal(&s.mem.slowCancelled, "shutdown"), "the server to see the agent's call cancelled")
}

// TestAgentEndReleasesEverything: an agent that returns, and one that is
// interrupted while spinning, leave no call running and no subscription on
// the server.
func TestAgentEndReleasesEverything(t *testing.T) {
	s := env(t)
	for _, tc := range []struct {
		name  string
		spin  bool
		uri   string
		check func(t *testing.T, out string, err error)
	}{
		{"returns", false, "test://sub/exit", func(t *testing.T, out string, err error) {
			if err != nil {
				t.Fatalf("run failed: %v", err)
			}
		}},
		{"interrupted", true, "test://sub/kill", func(t *testing.T, out string, err error) {
			var tr *wt.Trap
			if !errors.Is(err, ErrInterrupted) || !errors.As(err, &tr) || !wt.IsInterrupt(err) || len(tr.Backtrace) == 0 {
				t.Fatalf("err = %v, want ErrInterrupted carrying the interrupt trap and the guest backtrace", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tag := "end-" + tc.name
			steps := []step{
				{"op": "get", "name": "mem", "as": "t"},
				{"op": "call-tool", "h": "t", "tool": "slow", "args": map[string]any{"tag": tag}, "as": "c"},
				{"op": "subscribe", "h": "t", "uri": tc.uri, "as": "s"},
				{"op": "subscribe-list", "h": "t", "as": "l"},
				{"op": "call-tool-blocking", "h": "t", "tool": "gate", "args": map[string]any{"tag": tag}},
			}
			if tc.spin {
				steps = append(steps, step{"op": "spin"})
			}
			a := s.startProbe(t, probeOpts{grace: 50 * time.Millisecond}, steps...)
			s.mem.enterGate(t, tag)
			wait(t, signal(&s.mem.slowStarted, tag), "the slow call to start")
			if counter(&s.mem.subscribes, tc.uri).Load() != 1 {
				t.Fatal("no MCP subscription")
			}
			s.mem.openGate(tag)
			if tc.spin {
				time.Sleep(100 * time.Millisecond) // into the spin loop
				a.Stop()
			}
			select {
			case <-a.Done():
			case <-time.After(30 * time.Second):
				t.Fatal("the agent did not end")
			}
			out, err := a.Wait()
			tc.check(t, out, err)
			wait(t, signal(&s.mem.slowCancelled, tag), "the server to see the call cancelled")
			eventually(t, "the MCP unsubscribe", func() bool { return counter(&s.mem.unsubscribes, tc.uri).Load() == 1 })
		})
	}
}

func TestProbeLog(t *testing.T) {
	s := env(t)
	rs := s.probe(t, probeOpts{name: "logger"},
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
}

func TestProbeFail(t *testing.T) {
	s := env(t)
	a := s.startProbe(t, probeOpts{}, step{"op": "fail", "message": "guest gave up"})
	<-a.Done()
	_, err := a.Wait()
	var re *RunError
	if !errors.As(err, &re) || re.Message != "guest gave up" {
		t.Fatalf("err = %v (%T), want RunError \"guest gave up\"", err, err)
	}
}

// TestStopDuringSubscribe: an agent stopped while its subscribe-resource
// waits on the server gets cancelled at once, and no MCP subscription
// outlives it: the tooling lets the request finish on the server (a server
// may complete a subscribe whatever the client says) and withdraws the
// subscription nobody holds.
func TestStopDuringSubscribe(t *testing.T) {
	s := env(t)
	for _, uri := range []string{slowSubscribeURI, stubbornSubscribeURI} {
		t.Run(uri, func(t *testing.T) {
			a := s.startProbe(t, probeOpts{},
				step{"op": "get", "name": "mem", "as": "t"},
				step{"op": "subscribe", "h": "t", "uri": uri, "as": "s"},
				step{"op": "recv", "timeout": 10000},
			)
			g := s.mem.gate(uri)
			wait(t, g.entered, "the subscribe to reach the server")
			a.Stop()
			checkSteps(t, finish(t, a), `"t"`, "err cancelled", "00000000-0000-0000-0000-000000000000 shutdown")
			close(g.release) // the server completes the subscribe after the agent left
			wait(t, g.done, "the subscribe handler to return")
			subs, unsubs := counter(&s.mem.subscribes, uri), counter(&s.mem.unsubscribes, uri)
			eventually(t, "the abandoned subscription withdrawn", func() bool { return subs.Load() == 1 && unsubs.Load() == 1 })
		})
	}
}

// TestUncaughtExceptions: an exception other than a string escaping a
// componentize-js run cannot become run's err (the err is a string): the
// guest aborts, which the host reports as a trap, and the JS message
// reaches the log through the guest's stderr.
func TestUncaughtExceptions(t *testing.T) {
	s := env(t)
	for _, what := range []string{"host-error", "error"} {
		t.Run(what, func(t *testing.T) {
			name := "uncaught-" + what
			a := s.startProbe(t, probeOpts{name: name}, step{"op": "throw", "what": what, "message": "boom"})
			_, err := waitAgent(t, a, 20*time.Second)
			var tr *wt.Trap
			if !errors.As(err, &tr) || len(tr.Backtrace) == 0 {
				t.Fatalf("err = %v (%T), want a trap with a backtrace", err, err)
			}
			var stderr []string
			for _, e := range s.logs.All() {
				if m := e.ContextMap(); m["agent"] == name && m["stream"] == "stderr" {
					stderr = append(stderr, e.Message)
				}
			}
			if !strings.Contains(strings.Join(stderr, "\n"), "expected a string") {
				t.Errorf("the guest's stderr was not logged with its name: %q", stderr)
			}
		})
	}
}

// TestProbeResubscribeFails: after the session is lost, a subscription
// whose re-subscription fails gets one error envelope with its id; the
// others keep working.
func TestProbeResubscribeFails(t *testing.T) {
	s := env(t)
	const bad, good = "test://sub/resubscribe", "test://sub/shared"
	a := s.startProbe(t, probeOpts{},
		step{"op": "get", "name": "mem", "as": "t"},
		step{"op": "subscribe", "h": "t", "uri": bad, "as": "bad"},
		step{"op": "subscribe", "h": "t", "uri": good, "as": "good"},
		step{"op": "call-tool-blocking", "h": "t", "tool": "gate", "args": map[string]any{"tag": "resubscribe"}},
		step{"op": "recv", "timeout": 20000},
		step{"op": "recv", "timeout": 20000},
		step{"op": "recv", "timeout": 300},
	)
	s.mem.enterGate(t, "resubscribe")
	s.mem.openGate("resubscribe")
	s.mem.failSubscribe.Store(bad, true)
	for ss := range s.mem.srv.Sessions() {
		ss.Close()
	}
	// The tooling reconnects and re-subscribes good (a second subscribe
	// on the server); then an update of good reaches the guest.
	eventually(t, "the re-subscription", func() bool { return counter(&s.mem.subscribes, good).Load() == 2 })
	s.mem.update(t, good, "after the reconnect")
	rs := finish(t, a)
	checkSteps(t, rs, `"t"`, `"bad"`, `"good"`, "*", "*", "*", "null")
	got := []string{summary(rs[4]), summary(rs[5])} // in either order
	slices.Sort(got)
	if !strings.HasPrefix(got[0], "bad error ") || got[1] != "good resource-updated test://sub/shared=after the reconnect" {
		t.Fatalf("after the reconnect the guest got %q", got)
	}
	for _, name := range []string{"mem", "mem-short"} { // both sessions were on the server
		eventually(t, name+" to be connected again", func() bool { return s.mcps[name].Status().Connected })
	}
}

// TestManyAgents: agents running one Program at once keep to their own
// inboxes and handles.
func TestManyAgents(t *testing.T) {
	s := env(t)
	const n = 12
	agents := make([]*Agent, n)
	for i := range agents {
		text := fmt.Sprint("agent-", i)
		agents[i] = s.startProbe(t, probeOpts{name: text},
			step{"op": "get", "name": "mem", "as": "t"},
			step{"op": "call-tool", "h": "t", "tool": "echo", "args": map[string]any{"text": text}, "as": "c"},
			step{"op": "call-tool-blocking", "h": "t", "tool": "echo", "args": map[string]any{"text": text + "-blocking"}},
			step{"op": "recv", "timeout": 20000},
			step{"op": "recv", "timeout": 0},
			step{"op": "log", "message": text},
		)
	}
	for i, a := range agents {
		rs := finish(t, a)
		text := fmt.Sprint("agent-", i)
		checkSteps(t, rs, `"t"`, `"c"`, "*", "c tool-result echo "+text, "null", "true")
		if got, _ := valueText(okAs[struct{ Value string }](t, rs[2]).Value); got != text+"-blocking" {
			t.Errorf("agent %d: blocking echo %q", i, got)
		}
	}
}

// TestJSMemoryLimit: a JS agent over its MemoryLimit gets a catchable
// "out of memory" (memory.grow fails), while an agent without a limit
// running alongside allocates the same amount.
func TestJSMemoryLimit(t *testing.T) {
	s := env(t)
	p := s.program(t, "test-agents", "probe")
	alloc := probeInput(t, []step{{"op": "alloc", "mb": 100}, {"op": "pending"}})
	limited := s.host.Start(p, AgentConfig{Name: "limited", MemoryLimit: 48 << 20}, alloc)
	free := s.host.Start(p, AgentConfig{Name: "unlimited"}, alloc)
	for _, tc := range []struct {
		a    *Agent
		want []string
	}{
		{limited, []string{"thrown out of memory", "0"}},
		{free, []string{"100", "0"}},
	} {
		out, err := waitAgent(t, tc.a, 30*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", tc.a.Name(), err)
		}
		var rs []stepResult
		if err := json.Unmarshal([]byte(out), &rs); err != nil {
			t.Fatal(err)
		}
		checkSteps(t, rs, tc.want...)
	}
}
