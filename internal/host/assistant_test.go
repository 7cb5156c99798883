package host

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/contract"
)

// assistantDirs are the builds of examples/agents/assistant.js.
var assistantDirs = []string{"agents", "agents-qjs"}

// TestExampleAssistant: the assistant example runs the tool loop through
// the scripted provider: the model asks for mem's echo, the agent calls it
// with call-tool and answers with a tool message, the model answers with
// the tool's text; with and without chat-stream. A prompt naming no tool
// is answered at once; a provider not granted fails the run.
func TestExampleAssistant(t *testing.T) {
	for _, dir := range assistantDirs {
		t.Run(dir, func(t *testing.T) {
			s := env(t)
			p := s.program(t, dir, "assistant")
			input := func(prompt string, stream bool) string {
				b, _ := json.Marshal(map[string]any{"provider": "fake", "toolings": []string{"mem"}, "prompt": prompt, "stream": stream})
				return string(b)
			}
			for _, tc := range []struct {
				name, input, want string
			}{
				{"chat", input(`call echo {"text":"hi from the loop"}`, false), "the tool said: hi from the loop"},
				{"chat-stream", input(`call echo {"text":"streamed"}`, true), "the tool said: streamed"},
				{"no tool", input("call nothing {}", true), "no tool nothing"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					name := "assistant-" + dir + "-" + tc.name
					out, err := waitAgent(t, s.host.Start(p, AgentConfig{Name: name}, tc.input), 60*time.Second)
					if err != nil || out != tc.want {
						t.Fatalf("assistant = %q, %v; want %q", out, err, tc.want)
					}
					var logged []string
					for _, e := range s.logs.All() {
						if e.ContextMap()["agent"] == name && strings.HasPrefix(e.Message, "assistant:") {
							logged = append(logged, e.Message)
						}
					}
					if tc.name != "no tool" && (len(logged) != 2 || !strings.HasPrefix(logged[0], "assistant: tool call echo ") ||
						!strings.Contains(logged[1], "scripted-1 answered in 2 turns (stop)")) {
						t.Errorf("logged %q", logged)
					}
				})
			}
			denied := s.host.Start(p, AgentConfig{Name: "assistant-denied", Providers: pumpAccessNone()}, input("hi", false))
			if _, err := waitAgent(t, denied, 60*time.Second); err == nil || !strings.Contains(err.Error(), "provider fake: denied") {
				t.Errorf("without the provider: %v", err)
			}
		})
	}
}

func pumpAccessNone() contract.ProviderAccess {
	return contract.ProviderAccess{Granted: func(string) bool { return false }}
}
