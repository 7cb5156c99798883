package contract_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestCallIDInProgressLogs: a queued call's progress notifications are
// logged with the call's id (the UUID the agent got), so the log ties them
// to the call.
func TestCallIDInProgressLogs(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	e := newEnv(t, envOptions{log: zap.New(core)})
	type none struct{}
	mcp.AddTool(e.srv.Server, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: req.Params.GetProgressToken(), Progress: 1, Total: 1, Message: "done",
		})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, err
	})
	_, h, in := e.agent(t, "a", 8)
	id, err := h.CallTool("progress", "{}")
	if err != nil {
		t.Fatal(err)
	}
	if env := recv(t, in); env.ID != id {
		t.Fatalf("envelope %q, want %q", env.ID, id)
	}
	testenv.Eventually(t, 10*time.Second, "the progress log entry", func() bool {
		for _, le := range logs.FilterMessage("progress").All() {
			if f := le.ContextMap(); f["call_id"] == id && f["tool"] == "progress" && f["message"] == "done" {
				return true
			}
		}
		return false
	})
}
