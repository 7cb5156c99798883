package daemon

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/provider/providertest"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestAssistantRemembers: the assistant service example keeps each
// conversation in the key-value store, so a daemon restarted on the same
// state directory continues a session where it stopped (the model is sent
// the earlier turn), and another session does not see it: as per-session
// instances (each its session's bucket) and as a single instance (its
// bucket "conversations"), built by each toolchain.
func TestAssistantRemembers(t *testing.T) {
	for _, build := range []string{"agents", "agents-qjs", "agents-go"} {
		for _, instances := range []string{"per-session", "single"} {
			t.Run(build+"/"+instances, func(t *testing.T) {
				dir := t.TempDir()
				gpt := providertest.New(t, providertest.OpenAI)
				path := writeConfig(t, dir, headerState(t, filepath.Join(dir, "state"))+providerTable(t, "gpt", gpt)+fmt.Sprintf(`
[agent.chat]
component = %q
instances = %q
providers = ["gpt"]
input = '{"provider":"gpt","toolings":[]}'
`, testenv.Agent(t, build, "assistant-service"), instances))

				r := serve(t, path)
				r.waitAgent(t, "chat", "running", isRunning)
				gpt.Script(providertest.Reply{Text: []string{"Nice to meet ", "you, Ada."}})
				mustReply(t, r, "chat", "s1", "My name is Ada.", "Nice to meet you, Ada.")
				r.stop(t)

				r = serve(t, path)
				r.waitAgent(t, "chat", "running", isRunning)
				gpt.Script(providertest.Reply{Text: []string{"You are Ada."}})
				mustReply(t, r, "chat", "s1", "What is my name?", "You are Ada.")
				body := string(gpt.Last().Body)
				for _, want := range []string{"My name is Ada.", "Nice to meet you, Ada.", "What is my name?"} {
					if !strings.Contains(body, want) {
						t.Errorf("the restarted daemon's request lacks %q of the conversation: %s", want, body)
					}
				}
				gpt.Script(providertest.Reply{Text: []string{"Hello."}})
				mustReply(t, r, "chat", "s2", "Hi.", "Hello.")
				if body := string(gpt.Last().Body); strings.Contains(body, "Ada") {
					t.Errorf("session s2's request has session s1's conversation: %s", body)
				}
			})
		}
	}
}
