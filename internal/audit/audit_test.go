package audit

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestEncodeFields(t *testing.T) {
	args := `{"path":"/srv/secret.txt"}`
	sum := sha256.Sum256([]byte(args))
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	var m map[string]any
	b := Encode(Record{Time: at, Agent: "reader", Tooling: "fs", Op: OpCallTool,
		Call:    Call{Tool: "read_file", CallID: "id-1", Args: args, HasArgs: true},
		Outcome: OutcomeOK, Duration: 3200 * time.Microsecond})
	if b[len(b)-1] != '\n' {
		t.Fatal("no newline")
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"time": "2026-01-02T03:04:05.000006Z", "agent": "reader", "tooling": "fs", "op": "call-tool",
		"tool": "read_file", "call_id": "id-1", "outcome": "ok", "duration_ms": 3.2,
		"args_bytes": float64(len(args)), "args_sha256": hex.EncodeToString(sum[:])}
	if len(m) != len(want) {
		t.Errorf("fields %v, want %v", m, want)
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	// With arguments allowed, the values are there.
	m = nil
	_ = json.Unmarshal(Encode(Record{Op: OpCallTool, Call: Call{Args: args, HasArgs: true}, WithArgs: true}), &m)
	if a, _ := m["arguments"].(map[string]any); a["path"] != "/srv/secret.txt" {
		t.Errorf("arguments with WithArgs: %v", m["arguments"])
	}
	// Resources: uri, no tool, no args fields.
	m = nil
	_ = json.Unmarshal(Encode(Record{Op: OpReadResource, Call: Call{URI: "file:///a"}, Outcome: "denied", Message: "no"}), &m)
	if m["uri"] != "file:///a" || m["tool"] != nil || m["args_bytes"] != nil || m["outcome"] != "denied" {
		t.Errorf("resource line %v", m)
	}
}

func TestFileModeAppendReopenDrop(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	if err := os.WriteFile(path, []byte(`{"before":true}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "fresh.jsonl")
	l, err := Open(fresh, 2)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(fresh)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("created with %v (%v), want 0600", st.Mode(), err)
	}
	// Not running: the buffer (2) fills and the rest is dropped, at once.
	start := time.Now()
	for range 5 {
		l.Write(Record{Op: OpCallTool, Outcome: OutcomeOK})
	}
	if d := l.Dropped(); d != 3 {
		t.Errorf("dropped %d, want 3", d)
	}
	if time.Since(start) > time.Second {
		t.Error("Write waited on a full buffer")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	cancel()
	<-done
	if n := len(readLines(t, fresh)); n != 2 {
		t.Errorf("%d lines written, want the 2 buffered", n)
	}

	// Append to an existing file; reopen after a rename (logrotate).
	l, err = Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	done = make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	l.Write(Record{Agent: "a", Op: OpCallTool, Outcome: OutcomeOK})
	rotated := path + ".1"
	if err := os.Rename(path, rotated); err != nil {
		t.Fatal(err)
	}
	if err := l.Reopen(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.Write(Record{Agent: "b", Op: OpCallTool, Outcome: OutcomeOK})
	cancel()
	<-done
	old := readLines(t, rotated)
	if len(old) != 2 || old[0]["before"] != true || old[1]["agent"] != "a" {
		t.Errorf("rotated file %v: want the old line and a's", old)
	}
	cur := readLines(t, path)
	if len(cur) != 1 || cur[0]["agent"] != "b" {
		t.Errorf("reopened file %v: want b's line", cur)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("reopened file mode %v (%v)", st.Mode(), err)
	}
	if l.Written() != 2 || l.Dropped() != 0 {
		t.Errorf("written %d dropped %d", l.Written(), l.Dropped())
	}
}

// TestEncodeChat: a model request's line has the provider (no tooling),
// the model, the stream id, the time to first token, the usage and the
// request's size and sha256; its text only with WithArgs.
func TestEncodeChat(t *testing.T) {
	req := []byte(`{"messages":[{"role":"user","content":"the plan"}]}`)
	sum := sha256.Sum256(req)
	r := Record{Agent: "thinker", Op: OpChatStream, Outcome: OutcomeOK, Duration: 2 * time.Second,
		ModelRequest: ModelRequest{Provider: "oai", StreamID: "s-1", Model: "gpt-x",
			FirstToken: 150 * time.Millisecond, HasFirstToken: true,
			InputTokens: 12, OutputTokens: 0, HasUsage: true, Request: req, HasRequest: true}}
	var m map[string]any
	if err := json.Unmarshal(Encode(r), &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"agent": "thinker", "provider": "oai", "op": "chat-stream", "stream_id": "s-1", "model": "gpt-x",
		"outcome": "ok", "duration_ms": 2000.0, "first_token_ms": 150.0, "input_tokens": 12.0, "output_tokens": 0.0,
		"request_bytes": float64(len(req)), "request_sha256": hex.EncodeToString(sum[:])}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	for _, k := range []string{"tooling", "request", "args_bytes"} {
		if _, ok := m[k]; ok {
			t.Errorf("the line has %s: %v", k, m)
		}
	}
	r.WithArgs = true
	m = nil
	_ = json.Unmarshal(Encode(r), &m)
	if q, _ := m["request"].(map[string]any); q == nil || q["messages"] == nil {
		t.Errorf("request with WithArgs: %v", m["request"])
	}
}
