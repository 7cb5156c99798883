package expose_test

import (
	"testing"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/expose"
)

func TestFromConfigAndStatic(t *testing.T) {
	c, err := config.Parse("", []byte(`version = 1
[host]
mcp = { listen = "127.0.0.1:8787" }
a2a = { listen = "127.0.0.1:8788" }
[agent.b]
component = "b.wasm"
accepts = ["mcp", "a2a"]
expose = ["mcp", "a2a"]
description = "bee"
skills = ["buzz"]
[agent.a]
component = "a.wasm"
accepts = ["mcp"]
expose = ["mcp"]
description = "ay"
[agent.hidden]
component = "h.wasm"
`))
	if err != nil {
		t.Fatal(err)
	}
	got := expose.FromConfig(c)
	mcp, a2a := got[expose.MCP], got[expose.A2A]
	if len(mcp) != 2 || mcp[0].Name != "a" || mcp[1].Name != "b" || mcp[0].Description != "ay" {
		t.Fatalf("mcp %+v", mcp)
	}
	if len(a2a) != 1 || len(a2a[0].Skills) != 1 || a2a[0].Skills[0].ID != "buzz" || a2a[0].Skills[0].Description != "bee" {
		t.Fatalf("a2a %+v", a2a)
	}

	cat := expose.NewStatic(got)
	calls := 0
	stop := cat.OnChange(func() { calls++ })
	cat.Set(expose.FromConfig(c)) // the same: no change
	if calls != 0 {
		t.Fatalf("%d change calls for an unchanged catalog", calls)
	}
	cat.Set(map[string][]expose.Agent{expose.MCP: mcp[:1]})
	if calls != 1 || len(cat.Exposed(expose.A2A)) != 0 {
		t.Fatalf("calls %d, a2a %+v", calls, cat.Exposed(expose.A2A))
	}
	if _, ok := expose.Find(cat, expose.MCP, "b"); ok {
		t.Fatal("b is no longer exposed")
	}
	stop()
	cat.Set(got)
	if calls != 1 {
		t.Fatal("called after stop")
	}
}

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		listen, token string
		ok            bool
	}{
		{"127.0.0.1:8787", "", true},
		{"[::1]:8787", "", true},
		{"localhost:8787", "", true},
		{"0.0.0.0:8787", "", false},
		{":8787", "", false},
		{"192.0.2.1:8787", "t", true},
	} {
		if err := expose.CheckListen("mcp", tc.listen, tc.token); (err == nil) != tc.ok {
			t.Errorf("%s token %q: %v", tc.listen, tc.token, err)
		}
	}
}
