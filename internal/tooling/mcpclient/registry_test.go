package mcpclient_test

import (
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

func TestRegistry(t *testing.T) {
	cfgs := map[string]*config.Tooling{
		"zeta":  {Kind: "mcp", Transport: "stdio", ToolingProcess: config.ToolingProcess{Command: "x"}},
		"alpha": {Kind: "mcp", Transport: "http", ToolingEndpoint: config.ToolingEndpoint{URL: "http://127.0.0.1:1/mcp"}},
		"mid":   {Transport: "stdio", ToolingProcess: config.ToolingProcess{Command: "y"}}, // kind defaults to mcp
	}
	r, err := mcpclient.NewRegistry(cfgs, zap.NewNop(), mcpclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Names(), []string{"alpha", "mid", "zeta"}; !slices.Equal(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
	all := r.All()
	if len(all) != 3 {
		t.Fatalf("All has %d", len(all))
	}
	for i, tl := range all {
		if tl.Name() != r.Names()[i] || tl.Kind() != "mcp" {
			t.Errorf("All[%d] = %s/%s", i, tl.Kind(), tl.Name())
		}
	}
	got, ok := r.Get("mid")
	if !ok || got.Name() != "mid" {
		t.Errorf("Get(mid) = %v, %v", got, ok)
	}
	if _, ok := got.(*mcpclient.Client); !ok {
		t.Errorf("Get(mid) is %T, want *mcpclient.Client", got)
	}
	if _, ok := r.Get("nope"); ok {
		t.Error("Get(nope) found something")
	}
	if cfgs["mid"].Name != "" {
		t.Error("NewRegistry modified the caller's config")
	}

	_, err = mcpclient.NewRegistry(map[string]*config.Tooling{
		"odd":  {Kind: "grpc"},
		"void": nil,
	}, zap.NewNop(), mcpclient.Options{})
	if err == nil || !strings.Contains(err.Error(), `unknown kind "grpc"`) || !strings.Contains(err.Error(), `"void"`) {
		t.Errorf("bad configs: err = %v", err)
	}
}
