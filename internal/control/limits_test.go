package control_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/control/controltest"
)

// TestLastErrorCapped: a huge last_error (a trap's backtrace, a server's
// error) reaches API clients and `ps` cut to MaxLastError bytes, at a rune
// boundary, saying how much was left out; short ones are untouched.
func TestLastErrorCapped(t *testing.T) {
	huge := "wasm trap: call stack exhausted\n" + strings.Repeat("  1: m!f @ 0x2e — é\n", 20000)
	be := controltest.NewBackend()
	be.AddAgent(control.AgentStatus{Name: "deep", State: "failed", LastError: huge})
	be.AddTooling(control.ToolingStatus{Name: "loud", State: "connecting", LastError: huge})
	srv := controltest.Serve(t, control.Options{Backend: be})
	c, err := control.Dial(srv.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	check := func(what, got string) {
		t.Helper()
		if len(got) > control.MaxLastError || !utf8.ValidString(got) || !strings.HasPrefix(got, "wasm trap: call stack exhausted\n") ||
			!strings.HasSuffix(got, " more bytes)") {
			t.Errorf("%s: %d bytes, ends %q", what, len(got), got[max(0, len(got)-40):])
		}
	}
	agents, err := c.Agents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range agents {
		switch a.Name {
		case "deep":
			check("agents", a.LastError)
		case "b":
			if a.LastError != "exited with err: nope" {
				t.Errorf("a short last_error changed: %q", a.LastError)
			}
		}
	}
	a, err := c.Agent(ctx, "deep")
	if err != nil {
		t.Fatal(err)
	}
	check("agent", a.LastError)
	if a, err = c.StopAgent(ctx, "deep"); err != nil {
		t.Fatal(err)
	}
	check("agent action", a.LastError)
	tl, err := c.Toolings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("toolings", tl[len(tl)-1].LastError)
	if control.CapError("short") != "short" {
		t.Error("CapError changed a short error")
	}
}
