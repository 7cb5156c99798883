package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestSend talks to agents of a real `toolhostd serve` as a user would:
// `toolhostd send` (streamed, --json, --session, idempotency, exit
// codes) and curl on the control socket for JSON and Server-Sent Events,
// resumed with Last-Event-ID.
func TestSend(t *testing.T) {
	noConfig(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "ctl.sock")
	cfgPath := writeConfigFile(t, dir, "toolhostd.toml", fmt.Sprintf(`version = 1
[host]
control_socket = %q

[agent.echo]
component = %q

[agent.fails]
component = %q
input = '{"steps":[{"op":"serve","mode":"error"}]}'
`, sock, testenv.Agent(t, "agents-qjs", "echo"), testenv.Agent(t, "test-agents-qjs", "probe")))
	srv := startServe(t, cfgPath)
	waitFor(t, 60*time.Second, func() bool {
		c, err := control.Dial(sock)
		if err != nil {
			return false
		}
		defer c.Close()
		list, err := c.Agents(t.Context())
		if err != nil || len(list) != 2 {
			return false
		}
		return list[0].State == "running" && list[1].State == "running"
	}, srv.out)

	code, out, errOut := runCLI(t, "send", "--socket", sock, "echo", "hello there")
	if code != 0 || out != "echo: hello there\n" {
		t.Fatalf("send: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, "send", "--socket", sock, "--session", "s7", "--json", "--idempotency-key", "k1", "echo", "once")
	var st control.MessageStatus
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || st.Status != "done" || st.Reply != "echo: once (session s7)" || st.Session != "s7" {
		t.Fatalf("send --json: exit %d, %q (%v)", code, out, err)
	}
	// The same key gets the same message, not a second delivery.
	code, out, _ = runCLI(t, "send", "--socket", sock, "--session", "s7", "--json", "--idempotency-key", "k1", "echo", "once")
	var again control.MessageStatus
	if err := json.Unmarshal([]byte(out), &again); code != 0 || err != nil || again.ID != st.ID {
		t.Fatalf("a retry with the same key: %q (first id %s)", out, st.ID)
	}
	if code, _, errOut := runCLI(t, "send", "--socket", sock, "fails", "no way"); code != 1 || !strings.Contains(errOut, "reply-error: no way") {
		t.Fatalf("a reply-error: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "send", "--socket", sock, "nobody", "x"); code != 2 || !strings.Contains(errOut, `no agent "nobody"`) {
		t.Fatalf("an unknown agent: exit %d, stderr %q", code, errOut)
	}

	// curl: JSON, then the stream, then its resumption by id.
	curl := func(args ...string) string {
		t.Helper()
		b, err := exec.Command("curl", append([]string{"-sS", "--unix-socket", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("curl %v: %v\n%s", args, err, b)
		}
		return string(b)
	}
	body := curl("-X", "POST", "-d", `{"content":"via curl"}`, "http://toolhostd/v1/agents/echo/messages")
	if !strings.Contains(body, `"status":"done"`) || !strings.Contains(body, `"reply":"echo: via curl"`) {
		t.Fatalf("curl JSON: %s", body)
	}
	stream := curl("-N", "-H", "Accept: text/event-stream", "-X", "POST", "-d", `{"content":"a b"}`, "http://toolhostd/v1/agents/echo/messages")
	events := strings.Split(strings.TrimSpace(stream), "\n\n")
	last := events[len(events)-1]
	if !strings.Contains(last, "event: reply\n") || !strings.Contains(last, `data: {"text":"echo: a b"}`) {
		t.Fatalf("the stream does not end with the whole reply:\n%s", stream)
	}
	var id, firstID string
	for _, ev := range events {
		if !strings.Contains(ev, "event: delta\n") && ev != last {
			t.Fatalf("an event that is neither a delta nor the last:\n%s", ev)
		}
		line, _, _ := strings.Cut(ev, "\n")
		if firstID == "" {
			firstID = strings.TrimPrefix(line, "id: ")
		}
		id = strings.TrimPrefix(line, "id: ")
	}
	msgID, _, _ := strings.Cut(firstID, ":")
	rest := curl("-N", "-H", "Accept: text/event-stream", "-H", "Last-Event-ID: "+firstID, "http://toolhostd/v1/agents/echo/messages/"+msgID)
	if got := strings.Count(rest, "\n\n"); got != len(events)-1 || !strings.Contains(rest, "id: "+id+"\n") {
		t.Fatalf("resumed after %s: %d events, want %d:\n%s", firstID, got, len(events)-1, rest)
	}
}
