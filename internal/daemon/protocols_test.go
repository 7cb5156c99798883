package daemon

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestProtocolsBetweenDaemons: one daemon exposes its echo agent over MCP
// and A2A on one loopback listener; go-sdk's MCP client calls it as a
// tool; a second daemon reaches it both as a [tooling.remote] (toolhostd
// as the MCP client) and as a [peer] (a2a-go as the A2A client) from an
// agent that calls the tool and sends to the peer.
func TestProtocolsBetweenDaemons(t *testing.T) {
	free := freePort(t)
	first := serve(t, writeConfig(t, t.TempDir(), header(t)+fmt.Sprintf(`
mcp = { listen = %q }
a2a = { listen = %q }

[agent.echo]
component = %q
description = "echoes what it is told"
accepts = ["api", "mcp", "a2a"]
expose = ["mcp", "a2a"]
`, free, free, testenv.Agent(t, "agents-qjs", "echo"))))
	first.waitAgent(t, "echo", "running", func(a control.AgentStatus) bool { return a.State == stateRunning })
	addrs := first.d.ProtocolAddrs()
	if len(addrs) != 1 {
		t.Fatalf("protocol listeners %v: mcp and a2a share one address", addrs)
	}
	addr := addrs[0]

	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "echo" || tools.Tools[0].Description != "echoes what it is told" {
		t.Fatalf("tools %+v (%v)", tools, err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "over mcp"}})
	if err != nil || res.IsError || len(res.Content) != 1 || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "echo: over mcp (session ") {
		t.Fatalf("call: %+v %q (%v)", res, res.Content[0].(*mcp.TextContent).Text, err)
	}

	second := serve(t, writeConfig(t, t.TempDir(), header(t)+fmt.Sprintf(`
[tooling.remote]
url = "http://%s/mcp"
connect_timeout = "30s"

[peer.far]
a2a = "http://%s/a2a/echo/.well-known/agent-card.json"

[agent.asker]
component = %q
toolings = ["remote"]
sends_to = ["far"]
restart = "never"
input = '{"steps":[{"op":"get","name":"remote","as":"r"},{"op":"call-tool-blocking","h":"r","tool":"echo","args":{"message":"from the second daemon"}},{"op":"send","to":"far","content":"over a2a","as":"q"},{"op":"recv-reply","id":"q","timeout":30000}]}'
`, addr, addr, testenv.Agent(t, "test-agents-qjs", "probe"))))
	var out string
	testenv.Eventually(t, 90*time.Second, "the asker's output", func() bool {
		o, ok := second.output("asker")
		out = o
		return ok
	})
	for _, want := range []string{`echo: from the second daemon`, `"text":"echo: over a2a (session `, `"tag":"reply"`} {
		if !strings.Contains(out, want) {
			t.Errorf("asker's output lacks %s:\n%s", want, out)
		}
	}
}

// freePort is a loopback address with a port free a moment ago (the
// config takes no port 0).
func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
