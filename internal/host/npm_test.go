package host

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// End-to-end runs against the npm MCP servers and the example agents of
// examples/agents (built into build/agents by make agents, and into
// build/agents-qjs with componentize-qjs) and their Go ports in
// examples/agents-go (build/agents-go): every example test runs on all three.

func TestProbeEverything(t *testing.T) {
	s := env(t)
	rs := s.probe(t, probeOpts{},
		step{"op": "get", "name": "everything", "as": "t"},
		step{"op": "kind", "h": "t"},
		step{"op": "list-tools", "h": "t"},
		step{"op": "call-tool-blocking", "h": "t", "tool": "echo", "args": map[string]any{"message": "hi"}},
		step{"op": "read-resource", "h": "t", "uri": "demo://resource/static/document/features.md"},
		step{"op": "read-resource", "h": "t", "uri": "demo://resource/dynamic/blob/1"},
		step{"op": "call-tool", "h": "t", "tool": "trigger-long-running-operation", "args": map[string]any{"duration": 30, "steps": 1}, "as": "long"},
		step{"op": "is-open", "h": "t", "id": "long"},
		step{"op": "cancel", "h": "t", "id": "long"},
		step{"op": "call-tool", "h": "t", "tool": "echo", "args": map[string]any{"message": "async"}, "as": "e"},
		step{"op": "recv", "timeout": 20000},
		step{"op": "recv", "timeout": 300},
		step{"op": "list-resources", "h": "t"},
	)
	checkSteps(t, rs, `"t"`, `"mcp"`, "*", "*", "*", "*", `"long"`, "true", "true", `"e"`, "e tool-result echo Echo: async", "null", "*")
	tools := okAs[[]struct{ Name string }](t, rs[2])
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if !strings.Contains(","+strings.Join(names, ",")+",", ",echo,") || len(names) < 5 {
		t.Errorf("tools %v", names)
	}
	if text, isErr := valueText(okAs[struct{ Value string }](t, rs[3]).Value); text != "Echo: hi" || isErr {
		t.Errorf("echo: %q", text)
	}
	type rc struct {
		URI, Content string
		MIMEType     *string `json:"mimeType"`
	}
	md := okAs[rc](t, rs[4])
	if md.MIMEType == nil || *md.MIMEType != "text/markdown" || !strings.HasPrefix(md.Content, "#") {
		t.Errorf("features.md: %+v", md)
	}
	// An MCP blob of a text/plain resource reaches the guest as text.
	blob := okAs[rc](t, rs[5])
	if !strings.HasPrefix(blob.Content, "Resource 1: This is a base64 blob") {
		t.Errorf("blob resource with a text mime type: %+v", blob)
	}
	if l := okAs[[]struct{ URI string }](t, rs[12]); len(l) < 2 {
		t.Errorf("list-resources: %v", l)
	}
}

func TestProbeFilesystem(t *testing.T) {
	s := env(t)
	rs := s.probe(t, probeOpts{},
		step{"op": "get", "name": "filesystem", "as": "t"},
		step{"op": "call-tool-blocking", "h": "t", "tool": "list_directory", "args": map[string]any{"path": s.fsDir}},
		step{"op": "call-tool-blocking", "h": "t", "tool": "read_text_file", "args": map[string]any{"path": filepath.Join(s.fsDir, "note.txt")}},
		step{"op": "call-tool-blocking", "h": "t", "tool": "read_text_file", "args": map[string]any{"path": "/etc/hostname"}},
		step{"op": "subscribe", "h": "t", "uri": "file://" + filepath.Join(s.fsDir, "note.txt")},
	)
	checkSteps(t, rs, `"t"`, "*", "*", "*", "err unsupported")
	value := func(i int) (string, bool) { return valueText(okAs[struct{ Value string }](t, rs[i]).Value) }
	if text, isErr := value(1); !strings.Contains(text, "note.txt") || isErr {
		t.Errorf("list_directory: %q", text)
	}
	if text, isErr := value(2); text != "a note for the agents\n" || isErr {
		t.Errorf("read_text_file: %q", text)
	}
	// Outside its root the server answers with a tool error: a success at
	// the contract's level, carrying isError.
	if text, isErr := value(3); !isErr {
		t.Errorf("read outside the root: %q without isError", text)
	}
}

func TestExampleHello(t *testing.T) {
	forExamples(t, func(t *testing.T, dir string) {
		s := env(t)
		p := s.program(t, dir, "hello")
		cases := []struct {
			name   string
			grants []string
			input  string
			want   []string // regexps, one per output line
		}{
			{
				name: "defaults",
				want: []string{
					`^everything \(mcp\): \d+ tools: .*\becho\b`,
					`^filesystem \(mcp\): \d+ tools: .*\bread_text_file\b`,
					`^everything\.echo\(\{"message":"hello from a WebAssembly agent"\}\) -> Echo: hello from a WebAssembly agent$`,
				},
			},
			{
				name:   "not found and denied",
				grants: []string{"mem"},
				input:  `{"toolings": ["mem", "everything", "nothing"], "call": {"tooling": "mem", "tool": "echo", "arguments": {"text": "hey"}}}`,
				want: []string{
					`^mem \(mcp\): 4 tools: echo, fail, gate, slow$`,
					`^everything: denied: .*`,
					`^nothing: not-found: .*`,
					`^mem\.echo\(\{"text":"hey"\}\) -> hey$`,
				},
			},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				o := probeOpts{name: "hello", grants: tc.grants}
				out, err := waitAgent(t, s.host.Start(p, o.config(), tc.input), 60*time.Second)
				if err != nil {
					t.Fatalf("hello failed: %v", err)
				}
				lines := strings.Split(out, "\n")
				if len(lines) != len(tc.want) {
					t.Fatalf("hello said:\n%s\nwant %d lines", out, len(tc.want))
				}
				for i, w := range tc.want {
					if !regexp.MustCompile(w).MatchString(lines[i]) {
						t.Errorf("line %d %q does not match %s", i, lines[i], w)
					}
				}
			})
		}
	})
}

func TestExampleFanout(t *testing.T) {
	forExamples(t, func(t *testing.T, dir string) {
		s := env(t)
		p := s.program(t, dir, "fanout")
		for _, tc := range []struct{ name, input, want string }{
			{"everything", "", "calls=10 results=10 errors=0 slow: open=true cancel=true open-after=false"},
			{"mem", `{"tooling": "mem", "n": 25, "arguments": {"text": "x"}, "slow": {"tool": "slow", "arguments": {"tag": "fanout"}}}`,
				"calls=25 results=25 errors=0 slow: open=true cancel=true open-after=false"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				out, err := waitAgent(t, s.host.Start(p, AgentConfig{Name: "fanout"}, tc.input), 60*time.Second)
				if err != nil || out != tc.want {
					t.Fatalf("fanout = %q, %v; want %q", out, err, tc.want)
				}
			})
		}
	})
}

func TestExampleWatch(t *testing.T) {
	forExamples(t, func(t *testing.T, dir string) {
		s := env(t)
		p := s.program(t, dir, "watch")
		t.Run("mem", func(t *testing.T) {
			const uri = "test://sub/watch"
			a := s.host.Start(p, AgentConfig{Name: "watch"}, fmt.Sprintf(`{"tooling": "mem", "uri": %q, "count": 3, "toggle": false}`, uri))
			testenv.Eventually(t, 20*time.Second, "the subscription", func() bool { return s.mem.Subscribes(uri) == 1 })
			// One update at a time, so that none coalesces with the next. The
			// server counts the subscribe before the host has it: an update
			// sent in between reaches no subscription, so it is sent again.
			for i := 1; i <= 3; i++ {
				deadline := time.Now().Add(20 * time.Second)
				for a.Inbox().Stats().Delivered < uint64(i) {
					if time.Now().After(deadline) {
						t.Fatalf("update %d never reached the guest", i)
					}
					s.mem.Update(t, uri, fmt.Sprint("w", i))
					for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end) && a.Inbox().Stats().Delivered < uint64(i); {
						time.Sleep(2 * time.Millisecond)
					}
				}
			}
			out, err := waitAgent(t, a, 20*time.Second)
			if err != nil || out != "3 updates of "+uri {
				t.Fatalf("watch = %q, %v", out, err)
			}
			testenv.Eventually(t, 20*time.Second, "the MCP unsubscribe", func() bool { return s.mem.Unsubscribes(uri) == 1 })
		})
		t.Run("stopped", func(t *testing.T) {
			const uri = "test://sub/stop"
			a := s.host.Start(p, AgentConfig{Name: "watch", Limits: AgentLimits{StopGrace: 10 * time.Second}}, fmt.Sprintf(`{"tooling": "mem", "uri": %q, "count": 3, "toggle": false}`, uri))
			testenv.Eventually(t, 20*time.Second, "the subscription", func() bool { return s.mem.Subscribes(uri) == 1 })
			// Past subscribe-resource and into recv (a stop during the
			// subscribe makes watch.js throw the cancelled host-error out of
			// run; TestUncaughtExceptions covers that).
			time.Sleep(500 * time.Millisecond)
			a.Stop()
			out, err := waitAgent(t, a, 20*time.Second)
			if err != nil || out != "0 updates of "+uri {
				t.Fatalf("stopped watch = %q, %v; want a clean return on the shutdown envelope", out, err)
			}
		})
		t.Run("everything", func(t *testing.T) {
			// server-everything sends an update every 5s once toggled on (once
			// per session: a second toggle turns them off).
			input := `{"count": 1}`
			if !s.everythingToggled.CompareAndSwap(false, true) {
				input = `{"count": 1, "toggle": false}`
			}
			out, err := waitAgent(t, s.host.Start(p, AgentConfig{Name: "watch"}, input), 60*time.Second)
			if err != nil || out != "1 updates of demo://resource/static/document/features.md" {
				t.Fatalf("watch = %q, %v", out, err)
			}
		})
	})
}
