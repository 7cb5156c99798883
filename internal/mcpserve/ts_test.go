package mcpserve_test

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/expose"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestTypeScriptClient drives the official TypeScript SDK's client
// (testdata/client.mjs) against the endpoint.
func TestTypeScriptClient(t *testing.T) {
	node := testenv.Node(t, "@modelcontextprotocol/sdk")
	f := serve(t, "tok")
	ctx := t.Context()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "client.mjs"), f.url, "tok")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 8) // never blocks the reader: the script prints two lines
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	line, ok := <-lines
	if !ok {
		t.Fatalf("no output: %v\n%s", cmd.Wait(), stderr.String())
	}
	var got struct {
		Tools []struct {
			Name, Description string
			Required          []string
		}
		Reply    string
		Progress []string
		Fail     struct {
			IsError bool
			Text    string
		}
		Session   string
		SessionID string
		Unknown   string
	}
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	if len(got.Tools) != 2 {
		t.Errorf("tools %+v", got.Tools)
	}
	for _, tool := range got.Tools {
		if !slices.Equal(tool.Required, []string{"message"}) || tool.Description == "" {
			t.Errorf("tool %+v", tool)
		}
	}
	if got.Reply != "a b c ." || strings.Join(got.Progress, "") != "a b c " {
		t.Errorf("reply %q, progress %q", got.Reply, got.Progress)
	}
	if !got.Fail.IsError || got.Fail.Text != "cannot do that" {
		t.Errorf("reply-error %+v", got.Fail)
	}
	if got.SessionID == "" || got.Session != got.SessionID {
		t.Errorf("session %q, MCP session %q", got.Session, got.SessionID)
	}
	if !strings.HasPrefix(got.Unknown, "-32602:") || !strings.Contains(got.Unknown, "nobody") {
		t.Errorf("unknown tool: %s", got.Unknown)
	}

	f.catalog.Set(map[string][]expose.Agent{expose.MCP: {{Name: "talk", Description: "talks"}}})
	line = testenv.Recv(t, lines, 20*time.Second, "the tools after list_changed")
	if line != `["talk"]` {
		t.Errorf("tools after list_changed: %s", line)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
}
