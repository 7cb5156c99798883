package contract_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/audit"
	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

func userReq(text string) provider.Request {
	return provider.Request{Messages: []provider.Message{{Role: provider.RoleSystem, Content: "be brief"}, {Role: provider.RoleUser, Content: text}}}
}

// chatEnv is the pump env with the scripted provider "fake" configured
// and an audit log; the agent is granted only "fake".
func chatEnv(t *testing.T, capacity int, audited bool) (*contract.Agent, *testenv.Scripted, *inbox.Inbox, string, func() []contract.ChatRecord) {
	t.Helper()
	e := newEnv(t, envOptions{})
	p := testenv.NewScripted("fake")
	lookup := func(name string) (provider.Provider, bool) {
		if name == "fake" || name == "other" {
			return p, true
		}
		return nil, false
	}
	var mu sync.Mutex
	var recs []contract.ChatRecord
	observe := func(r contract.ChatRecord) { mu.Lock(); recs = append(recs, r); mu.Unlock() }
	records := func() []contract.ChatRecord {
		mu.Lock()
		defer mu.Unlock()
		return append([]contract.ChatRecord(nil), recs...)
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	in := inbox.New(capacity)
	a := contract.NewAgent(e.hub, "thinker", in, contract.Options{
		Providers: lookup, ChatObserver: observe, Audit: l,
		ProviderAccess: contract.ProviderAccess{Granted: func(n string) bool { return n == "fake" }, AuditMessages: func(string) bool { return audited }},
	})
	t.Cleanup(a.Close)
	return a, p, in, path, records
}

func TestGetProvider(t *testing.T) {
	a, _, _, _, _ := chatEnv(t, 8, false)
	for _, tc := range []struct {
		name string
		code tooling.ErrorCode
	}{{"nope", tooling.CodeNotFound}, {"other", tooling.CodeDenied}} {
		if _, err := a.GetProvider(tc.name); codeOf(t, err) != tc.code {
			t.Errorf("GetProvider(%q) = %v, want %v", tc.name, err, tc.code)
		}
	}
	ph, err := a.GetProvider("fake")
	if err != nil {
		t.Fatal(err)
	}
	if ph.Kind() != "scripted" || ph.Name() != "fake" {
		t.Fatalf("kind, name = %q, %q", ph.Kind(), ph.Name())
	}
}

// TestChatStream: deltas then exactly one chat-done whose text is their
// concatenation; the stream is open until then.
func TestChatStream(t *testing.T) {
	a, _, in, _, recs := chatEnv(t, 8, false)
	ph, err := a.GetProvider("fake")
	if err != nil {
		t.Fatal(err)
	}
	const text = "the quick brown fox jumps over the lazy dog"
	id, err := ph.ChatStream(userReq("echo " + text))
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for {
		env := recv(t, in)
		if env.ID != id {
			t.Fatalf("envelope of %s, want %s", env.ID, id)
		}
		if d, ok := env.Event.(inbox.ChatDelta); ok {
			got.WriteString(d.Text)
			continue
		}
		done, ok := env.Event.(inbox.ChatDone)
		if !ok {
			t.Fatalf("terminal event %T, want ChatDone", env.Event)
		}
		if done.Response.Message.Content != text || got.String() != text {
			t.Fatalf("deltas %q, done %q, want %q", got.String(), done.Response.Message.Content, text)
		}
		break
	}
	if ph.IsOpen(id) {
		t.Fatal("IsOpen after chat-done")
	}
	quiet(t, in, 50*time.Millisecond)
	testenv.Eventually(t, 5*time.Second, "the chat record", func() bool { return len(recs()) == 1 })
	if r := recs()[0]; r.Outcome != "ok" || r.Model != "scripted-1" || r.Usage.OutputTokens != uint32(len(text)) || !r.HasFirstToken || r.Op != audit.OpChatStream {
		t.Fatalf("chat record %+v", r)
	}
}

// TestChatStreamCancel: cancel aborts the request (the provider sees its
// context end), returns true once, and nothing of the stream arrives
// after it; dropping the handle does the same to its streams.
func TestChatStreamCancel(t *testing.T) {
	for _, how := range []string{"cancel", "drop"} {
		t.Run(how, func(t *testing.T) {
			a, p, in, _, _ := chatEnv(t, 8, false)
			ph, err := a.GetProvider("fake")
			if err != nil {
				t.Fatal(err)
			}
			id, err := ph.ChatStream(userReq("hang " + how))
			if err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 5*time.Second, "the first delta", func() bool { return in.Pending() == 1 })
			if !ph.IsOpen(id) {
				t.Fatal("IsOpen = false on a running stream")
			}
			if how == "cancel" {
				if !ph.Cancel(id) {
					t.Fatal("Cancel = false on an open stream")
				}
				if ph.Cancel(id) {
					t.Fatal("second Cancel = true")
				}
			} else {
				ph.Close()
			}
			testenv.Recv(t, p.Cancelled(how), 10*time.Second, "the provider to see its request cancelled")
			quiet(t, in, 100*time.Millisecond)
			if ph.IsOpen(id) {
				t.Fatal("IsOpen after cancel")
			}
		})
	}
}

// TestChatErrorAndRefusals: a failing stream ends with one error envelope
// after its deltas and no chat-done; bad requests are invalid-argument;
// a full inbox is busy; a tooling cancel does not touch a stream.
func TestChatErrorAndRefusals(t *testing.T) {
	a, _, in, path, _ := chatEnv(t, 1, false)
	ph, err := a.GetProvider("fake")
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []provider.Request{
		{},
		{Messages: []provider.Message{{Role: provider.RoleTool, Content: "x"}}},
		{Messages: []provider.Message{{Role: provider.RoleUser, Content: "x"}}, ToolChoice: &provider.ToolChoice{Mode: provider.ToolChoiceNamed, Name: "t"}},
		{Messages: []provider.Message{{Role: provider.RoleUser, Content: "x"}}, Tools: []tooling.Tool{{Name: "t", InputSchema: "[]"}}},
	} {
		if _, err := ph.ChatStream(req); codeOf(t, err) != tooling.CodeInvalidArgument {
			t.Errorf("ChatStream(%+v) = %v, want invalid-argument", req, err)
		}
	}
	id, err := ph.ChatStream(userReq("fail"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ph.ChatStream(userReq("echo x")); codeOf(t, err) != tooling.CodeBusy {
		t.Fatalf("second stream on a capacity-1 inbox: %v, want busy", err)
	}
	h, err := a.Get("mem")
	if err != nil {
		t.Fatal(err)
	}
	if h.Cancel(id) {
		t.Fatal("a tooling's cancel ended a chat stream")
	}
	if d, ok := recv(t, in).Event.(inbox.ChatDelta); !ok || d.Text != "partial" {
		t.Fatalf("first envelope %+v, want the delta", d)
	}
	env := recv(t, in)
	if e, ok := env.Event.(inbox.Error); !ok || e.Err.Code != tooling.CodeUnavailable || env.ID != id {
		t.Fatalf("terminal %+v, want an unavailable error", env)
	}
	quiet(t, in, 50*time.Millisecond)
	resp, err := ph.Chat(context.Background(), userReq("echo secret words"))
	if err != nil || resp.Message.Content != "secret words" {
		t.Fatalf("Chat = %+v, %v", resp, err)
	}
	a.Close()
	lines := auditLines(t, path, 7)
	last := lines[len(lines)-1]
	if last["op"] != "chat" || last["provider"] != "fake" || last["model"] != "scripted-1" || last["outcome"] != "ok" ||
		last["input_tokens"] != 25.0 || last["output_tokens"] != 12.0 || last["request_sha256"] == nil || last["request"] != nil {
		t.Fatalf("audit line %v", last)
	}
	var fail map[string]any
	for _, l := range lines {
		if l["stream_id"] == id {
			fail = l
		}
	}
	if fail["op"] != "chat-stream" || fail["outcome"] != "unavailable" || fail["first_token_ms"] == nil || fail["stream_id"] != id {
		t.Fatalf("audit line of the failed stream %v", fail)
	}
}

// auditLines waits for n lines in the audit log at path and decodes them.
func auditLines(t *testing.T, path string, n int) []map[string]any {
	t.Helper()
	var out []map[string]any
	testenv.Eventually(t, 5*time.Second, "the audit lines", func() bool {
		f, err := os.Open(path)
		if err != nil {
			return false
		}
		defer f.Close()
		out = out[:0]
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				t.Fatalf("audit line %q is not JSON", sc.Text())
			}
			out = append(out, m)
		}
		return len(out) >= n
	})
	return out
}

// TestChatAuditMessages: with audit_arguments the audit line carries the
// request's text; without it only its size and sha256 (TestChatErrorAndRefusals).
func TestChatAuditMessages(t *testing.T) {
	a, _, _, path, _ := chatEnv(t, 8, true)
	ph, err := a.GetProvider("fake")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ph.Chat(context.Background(), userReq("echo the secret plan")); err != nil {
		t.Fatal(err)
	}
	l := auditLines(t, path, 1)[0]
	req, _ := l["request"].(map[string]any)
	msgs, _ := req["messages"].([]any)
	if len(msgs) != 2 || msgs[1].(map[string]any)["content"] != "echo the secret plan" || l["request_bytes"] == nil {
		t.Fatalf("audit line %v, want the request's messages", l)
	}
}

// TestChatSlowAgent: an agent that receives nothing while a stream sends
// thousands of deltas holds one merged delta and the terminal envelope,
// and the merged text is all of it.
func TestChatSlowAgent(t *testing.T) {
	a, _, in, _, _ := chatEnv(t, 4, false)
	ph, err := a.GetProvider("fake")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("0123456789", 3000) // 10,000 deltas of 3 bytes
	id, err := ph.ChatStream(userReq("echo " + text))
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the stream to end", func() bool { return !ph.IsOpen(id) })
	if p := in.Pending(); p != 2 {
		t.Fatalf("%d envelopes held, want one merged delta and chat-done", p)
	}
	if d, ok := recv(t, in).Event.(inbox.ChatDelta); !ok || d.Text != text {
		t.Fatalf("merged delta of %d bytes, want %d", len(d.Text), len(text))
	}
	if _, ok := recv(t, in).Event.(inbox.ChatDone); !ok {
		t.Fatal("no chat-done after the merged delta")
	}
	if st := in.Stats(); st.Merged != 9999 {
		t.Fatalf("Merged = %d, want 9999", st.Merged)
	}
}

// TestChatStreamAgain: a stream made again under its id (a durable
// instance's replay ended with it open, the guest given skip bytes of its
// deltas) delivers the deltas past those bytes and the whole response,
// and its audit line says reissued.
func TestChatStreamAgain(t *testing.T) {
	a, _, in, path, _ := chatEnv(t, 8, false)
	ph, err := a.GetProvider("fake")
	if err != nil {
		t.Fatal(err)
	}
	const text = "the quick brown fox"
	const id = "00000000-0000-4000-8000-00000000abcd"
	if got, err := ph.ChatStreamAgain(id, userReq("echo "+text), len("the qu")); err != nil || got != id {
		t.Fatalf("ChatStreamAgain = %q, %v", got, err)
	}
	var deltas strings.Builder
	for {
		env := recv(t, in)
		if env.ID != id {
			t.Fatalf("envelope of %s, want %s", env.ID, id)
		}
		if d, ok := env.Event.(inbox.ChatDelta); ok {
			deltas.WriteString(d.Text)
			continue
		}
		done, ok := env.Event.(inbox.ChatDone)
		if !ok || done.Response.Message.Content != text {
			t.Fatalf("terminal %+v, want chat-done of %q", env.Event, text)
		}
		break
	}
	if want := text[len("the qu"):]; deltas.String() != want {
		t.Errorf("deltas %q, want the text past the bytes the guest had: %q", deltas.String(), want)
	}
	a.Close()
	testenv.Eventually(t, 5*time.Second, "the reissued audit line", func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), `"reissued":true`)
	})
}
