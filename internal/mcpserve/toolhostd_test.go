package mcpserve_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// TestToolhostdClient: toolhostd's own MCP client (what a [tooling.X] url
// = ".../mcp" of another host runs) lists and calls the agents.
func TestToolhostdClient(t *testing.T) {
	f := serve(t, "tok")
	t.Setenv("PEER_MCP_TOKEN", "tok")
	cfg := &config.Tooling{
		Name:            "team",
		Kind:            "mcp",
		Transport:       "http",
		ToolingEndpoint: config.ToolingEndpoint{URL: f.url, Headers: map[string]string{"Authorization": "Bearer ${env:PEER_MCP_TOKEN}"}},
	}
	m, err := mcpclient.New(cfg, nil, mcpclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx, nil) }()
	defer func() { cancel(); testenv.Recv(t, done, 30*time.Second, "the tooling to stop") }()
	testenv.Eventually(t, 30*time.Second, "the tooling's session", func() bool { return m.Status().Connected })

	tools, err := m.ListTools(t.Context())
	if err != nil || len(tools) != 2 {
		t.Fatalf("tools %+v %v", tools, err)
	}
	for _, tc := range []struct {
		args    string
		text    string
		isError bool
	}{
		{`{"message":"words a b"}`, "a b .", false},
		{`{"message":"fail"}`, "cannot do that", true},
	} {
		res, err := m.CallTool(t.Context(), "talk", json.RawMessage(tc.args))
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			IsError bool `json:"isError"`
			Content []struct{ Text string }
		}
		if err := json.Unmarshal([]byte(res.Value), &v); err != nil {
			t.Fatal(err)
		}
		if v.IsError != tc.isError || len(v.Content) != 1 || v.Content[0].Text != tc.text {
			t.Fatalf("%s: %s", tc.args, res.Value)
		}
	}
}
