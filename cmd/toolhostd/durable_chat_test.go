package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/provider/providertest"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestDurableChatStreamMadeAgain: a durable agent's model stream cut by
// its host's kill (SIGKILL) mid-stream (its first delta sent) is made
// again when the instance is resumed: the provider gets the request a
// second time (paid again: the audit line of the stream says reissued,
// with its tokens) and the guest's answer is whole, never the first
// stream's deltas and then the second's (contract's TestChatStreamAgain
// checks the deltas a guest had are not given again).
func TestDurableChatStreamMadeAgain(t *testing.T) {
	gpt := providertest.New(t, providertest.OpenAI)
	held, release := make(chan struct{}), make(chan struct{})
	var once, released sync.Once
	gpt.SetDefault(providertest.Reply{Text: []string{"Hel", "lo ", "world"}, InputTokens: 5, OutputTokens: 3,
		AfterFirst: func() {
			first := false
			once.Do(func() { first = true })
			if first {
				close(held)
				<-release
			}
		}})
	releaseHeld := func() { released.Do(func() { close(release) }) }
	t.Cleanup(releaseHeld)
	c := gpt.Config(t)
	dir := t.TempDir()
	auditLog := filepath.Join(dir, "audit.jsonl")
	sock := filepath.Join(dir, "ctl.sock")
	cfg := writeConfigFile(t, dir, "toolhostd.toml", fmt.Sprintf(`version = 1
[host]
state_dir = %q
control_socket = %q
audit_log = %q
log_level = "debug"

[provider.gpt]
kind = %q
base_url = %q
api_key = %q
model = %q
max_retries = 0

[agent.assistant]
component = %q
providers = ["gpt"]
durable = true
restart = "never"
input = '{"provider":"gpt","toolings":[],"prompt":"hi","stream":true}'
`, filepath.Join(dir, "state"), sock, auditLog, c.Kind, c.BaseURL, c.APIKey, c.Model,
		testenv.Agent(t, "agents", "assistant")))

	first := startServe(t, cfg)
	testenv.Recv(t, held, 60*time.Second, "the stream's first delta")
	// The stream is recorded as started (durably) before it is made.
	ctl := dialControl(t, sock, first)
	testenv.Eventually(t, 30*time.Second, "the stream's started entry", func() bool {
		l, err := ctl.Oplog(t.Context(), "assistant", "", false)
		if err != nil {
			return false
		}
		for _, e := range l.Entries {
			if strings.HasSuffix(e.Call, "#[method]provider.chat-stream") && e.Kind == "started" {
				return true
			}
		}
		return false
	})
	ctl.Close()
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.wait(t, 10*time.Second)
	releaseHeld()

	second := startServe(t, cfg)
	testenv.Eventually(t, 60*time.Second, "the resumed run to return", func() bool {
		return strings.Contains(second.out.String(), "agent run returned ok")
	})
	out := second.out.String()
	if !strings.Contains(out, `"output": "Hello world"`) {
		t.Errorf("the resumed run's output is not the whole answer\n%s", out)
	}
	if !strings.Contains(out, "a model call was out when the instance stopped: made again") &&
		!strings.Contains(out, "a chat stream was open when the instance stopped: made again") {
		t.Errorf("the resumed instance did not say it made the stream again\n%s", out)
	}
	if n := len(gpt.Requests()); n != 2 {
		t.Errorf("the provider got %d requests, want 2 (the cut one made again)", n)
	}
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = second.wait(t, 30*time.Second)
	b, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	var reissued int
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec struct {
			Op       string `json:"op"`
			Reissued bool   `json:"reissued"`
			Out      *int   `json:"output_tokens"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Op == "chat-stream" {
			if !rec.Reissued || rec.Out == nil || *rec.Out != 3 {
				t.Errorf("chat-stream audit line %s: want reissued with its 3 output tokens", line)
			}
			reissued++
		}
	}
	if reissued != 1 {
		t.Errorf("%d chat-stream audit lines, want the one made again\n%s", reissued, b)
	}
}

// TestDurableRunChat: `toolhostd run --chat` of a durable agent (the paced
// test agent, replying word by word with a read-only pause after each)
// killed (SIGKILL) mid-reply is resumed by the same command run again: it
// prints the whole reply to the line sent before the kill, the agent was
// given that line once ("delivered" called once: the replay answered it
// from the oplog), the pause out at the kill is made again, and the
// oplog ends with the chat.
func TestDurableRunChat(t *testing.T) {
	const content = "one two three four five six "
	ps, psURL := newHoldPace(t, 3)
	dir := t.TempDir()
	component := testenv.Agent(t, "test-agents", "paced")
	cfg := writeConfigFile(t, dir, "toolhostd.toml", fmt.Sprintf("version = 1\n[host]\nstate_dir = %q\n\n", filepath.Join(dir, "state"))+
		pacedTables(t, psURL, ""))

	first := startToolhostdIn(t, nil, strings.NewReader(content+"\n"), "--config", cfg, "run", "--chat", component)
	killWhenHeld(t, first, ps.held, "the reply's third pause")
	ps.releaseHeld()

	// Nothing more to say: the chat prints the resumed reply, then ends
	// at the end of its input.
	second := startToolhostdIn(t, nil, strings.NewReader(""), "--config", cfg, "run", "--chat", component)
	if err := second.wait(t, 60*time.Second); err != nil {
		t.Fatalf("the second chat: %v\n%s", err, second.out.String())
	}
	// Its stdout and stderr are one buffer: the reply's words, printed as
	// they come, are among the log lines, in order.
	out := second.out.String()
	at := strings.Index(out, "resuming from its oplog")
	if at < 0 {
		t.Fatalf("the second chat did not resume from its oplog\n%s", out)
	}
	rest := out[at:]
	for _, w := range strings.Fields(content) {
		i := strings.Index(rest, w+" ")
		if i < 0 {
			t.Fatalf("the second chat's output lacks %q of the reply %q, in order\n%s", w, content, out)
		}
		rest = rest[i+len(w):]
	}
	ps.check(t, content, "kill")
	noOplogsLeft(t, dir)
}
