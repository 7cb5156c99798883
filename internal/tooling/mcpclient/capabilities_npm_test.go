package mcpclient_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// TestEverythingClientCapabilities: server-everything (the TypeScript
// SDK's reference server) registers its roots, elicitation and sampling
// tools only for a client that advertises the capability, so its tool list
// shows what toolhostd offers; the tools then exercise each answer.
func TestEverythingClientCapabilities(t *testing.T) {
	cfg := everythingStdio(t)
	cfg.Roots = []string{"file:///srv/data"}
	cfg.Elicitation = config.ElicitationAcceptDefaults
	cfg.LogLevel = "debug"
	core, logs := observer.New(zapcore.DebugLevel)
	m := newMCP(t, cfg, zap.New(core), mcpclient.Options{})
	testenv.ServeTooling(t, m, nil)
	waitConnected(t, m)

	// The conditional tools come after initialization, with list_changed.
	var tools map[string]tooling.Tool
	testenv.Eventually(t, 20*time.Second, "server-everything's conditional tools", func() bool {
		tools = toolNames(t, m)
		_, ok := tools["get-roots-list"]
		return ok
	})
	if _, ok := tools["trigger-elicitation-request"]; !ok {
		t.Errorf("no trigger-elicitation-request: elicitation not advertised")
	}
	if _, ok := tools["trigger-sampling-request"]; ok {
		t.Errorf("trigger-sampling-request offered: sampling advertised")
	}

	if got := callText(t, t.Context(), m, "get-roots-list", `{}`); !strings.Contains(got, "URI: file:///srv/data") || !strings.Contains(got, "(1 total)") {
		t.Errorf("get-roots-list = %q", got)
	}

	res, err := m.CallTool(t.Context(), "trigger-elicitation-request", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	// Its form requires "name", which has no default: accept-defaults
	// cannot fill it, so it declines (the conformance suite's
	// elicitation-sep1034-client-defaults covers accepting).
	if !strings.Contains(res.Value, "User declined") {
		t.Errorf("trigger-elicitation-request with accept-defaults: %s", res.Value)
	}
	declined := logs.FilterMessage("elicitation declined").All()
	if len(declined) != 1 {
		t.Fatalf("%d elicitation declined entries, want 1", len(declined))
	}
	if f := declined[0].ContextMap(); f["reason"] != "a required field has no default" || fmt.Sprint(f["fields_without_default"]) != "[name]" {
		t.Errorf("declined with %v", f)
	}

	// log_level debug lets every level through; the first simulated
	// message comes at once, at a random level.
	callText(t, t.Context(), m, "toggle-simulated-logging", `{}`)
	var e observer.LoggedEntry
	testenv.Eventually(t, 20*time.Second, "a simulated server log message", func() bool {
		for _, le := range logs.FilterLoggerName("tooling.server").All() {
			if strings.Contains(strings.ToLower(le.Message), "level") {
				e = le
				return true
			}
		}
		return false
	})
	f := e.ContextMap()
	lvl := fmt.Sprint(f["level_mcp"])
	want := map[string]zapcore.Level{"debug": zapcore.DebugLevel, "info": zapcore.InfoLevel, "notice": zapcore.InfoLevel,
		"warning": zapcore.WarnLevel, "error": zapcore.ErrorLevel, "critical": zapcore.ErrorLevel,
		"alert": zapcore.ErrorLevel, "emergency": zapcore.ErrorLevel}
	if wl, ok := want[lvl]; !ok || e.Level != wl || f["tooling"] != "everything" || !strings.HasPrefix(strings.ToLower(e.Message), lvl) {
		t.Errorf("server log entry %q at %v with %v", e.Message, e.Level, f)
	}
}

// TestEverythingDefaultCapabilities: with nothing configured, toolhostd
// offers no roots (server-everything registers no get-roots-list) and
// still answers elicitation (declining).
func TestEverythingDefaultCapabilities(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	m := newMCP(t, everythingStdio(t), zap.New(core), mcpclient.Options{})
	testenv.ServeTooling(t, m, nil)
	waitConnected(t, m)
	var tools map[string]tooling.Tool
	testenv.Eventually(t, 20*time.Second, "server-everything's conditional tools", func() bool {
		tools = toolNames(t, m)
		_, ok := tools["trigger-elicitation-request"]
		return ok
	})
	if _, ok := tools["get-roots-list"]; ok {
		t.Errorf("get-roots-list offered: roots advertised without configured roots")
	}
	res, err := m.CallTool(t.Context(), "trigger-elicitation-request", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Value, "User declined") {
		t.Errorf("trigger-elicitation-request with the default policy: %s", res.Value)
	}
	if logs.FilterMessage("elicitation declined").Len() != 1 {
		t.Errorf("the elicitation was not logged as declined")
	}
}
