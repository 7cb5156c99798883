package system_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/provider/providertest"
	"github.com/toolhostd/toolhostd/internal/system"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newSystem parses a config made of the fake OpenAI API as provider gpt,
// an audit log and the text extra, and builds its system without a host.
func newSystem(t *testing.T, extra string) (*system.System, *providertest.Server, string) {
	t.Helper()
	srv := providertest.New(t, providertest.OpenAI)
	c := srv.Config(t)
	dir := t.TempDir()
	auditPath := filepath.Join(dir, "audit.jsonl")
	text := fmt.Sprintf("version = 1\n\n[host]\naudit_log = %q\nstate_dir = %q\n\n[provider.gpt]\nkind = %q\nbase_url = %q\napi_key = %q\nmodel = %q\nmax_retries = 0\n%s",
		auditPath, filepath.Join(dir, "state"), c.Kind, c.BaseURL, c.APIKey, c.Model, extra)
	path := filepath.Join(dir, "toolhostd.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	sys, err := system.New(cfg, system.Options{NoHost: true})
	if err != nil {
		t.Fatal(err)
	}
	return sys, srv, auditPath
}

// TestAgentThroughTheSystem: an agent made with the system's options and
// its config's provider access gets its provider, is held to its grant's
// models, and its requests are audited; Serve writes the audit log out
// when it stops.
func TestAgentThroughTheSystem(t *testing.T) {
	sys, srv, auditPath := newSystem(t, fmt.Sprintf(
		"\n[agent.a]\ncomponent = %q\nproviders = [\"gpt\"]\n\n[agent.a.grants.gpt]\nmodels = [\"fake-*\"]\n", "a.wasm"))
	if sys.Host != nil {
		t.Fatal("WithoutHost made a host")
	}
	stop := sys.Start()
	in := inbox.New(8)
	ac := sys.Config.Agent["a"]
	opts := sys.AgentOptions()
	opts.ProviderAccess = sys.ProviderAccess("a", ac, nil)
	a := contract.NewAgent(sys.Hub, "a", in, opts)
	ph, err := a.GetProvider("gpt")
	if err != nil {
		t.Fatal(err)
	}
	srv.Script(providertest.Reply{Text: []string{"hi"}})
	user := []provider.Message{{Role: provider.RoleUser, Content: "hello"}}
	if _, err := ph.Chat(context.Background(), provider.Request{Messages: user}); err != nil {
		t.Fatalf("a chat with the provider's default model: %v", err)
	}
	_, err = ph.Chat(context.Background(), provider.Request{Model: "other-model", Messages: user})
	if herr := tooling.AsError(err); herr == nil || herr.Code != tooling.CodeDenied {
		t.Fatalf("a chat with a model the grant leaves out: %v, want denied", err)
	}
	a.Close()
	in.Shutdown()
	stop()
	if err := sys.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(b), `"op":"chat"`); got != 2 {
		t.Errorf("%d chat lines in the audit log, want 2:\n%s", got, b)
	}
	if !strings.Contains(string(b), `"outcome":"denied"`) {
		t.Errorf("the denied chat is not audited:\n%s", b)
	}
}

// TestWithToolingsServesTheRestIdle: toolings left out by WithToolings are
// still known to the hub (a get of one succeeds, its operations are
// unavailable) but nothing is started for them.
func TestWithToolingsServesTheRestIdle(t *testing.T) {
	cfg, err := config.Parse("test.toml", []byte("version = 1\n\n[tooling.off]\ncommand = \"/nonexistent/server\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	sys, err := system.New(cfg, system.Options{NoHost: true, Toolings: func(string) bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	if len(sys.Toolings) != 0 {
		t.Fatalf("toolings made: %v, want none", sys.Toolings)
	}
	if got := sys.Hub.Names(); len(got) != 1 || got[0] != "off" {
		t.Fatalf("hub serves %v, want [off]", got)
	}
	stop := sys.Start()
	defer stop()
	a := contract.NewAgent(sys.Hub, "a", inbox.New(8), contract.Options{})
	defer a.Close()
	h, err := a.Get("off")
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.ListTools(context.Background())
	if herr := tooling.AsError(err); herr == nil || herr.Code != tooling.CodeUnavailable {
		t.Fatalf("list-tools of an idle tooling: %v, want unavailable", err)
	}
}

// TestHostError: a host that cannot be made is New's HostError.
func TestHostError(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("test.toml", []byte(fmt.Sprintf("version = 1\n[host]\ncache_dir = %q\n", filepath.Join(blocker, "cache"))))
	if err != nil {
		t.Fatal(err)
	}
	_, err = system.New(cfg, system.Options{EngineOnly: true})
	var he *system.HostError
	if !errors.As(err, &he) {
		t.Fatalf("New with a cache dir under a file: %v, want a HostError", err)
	}
}

// TestEngineOnly: what toolhostd compile builds is an engine with the
// config's compile cache and nothing else: no host, gateway, providers or
// toolings.
func TestEngineOnly(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	cfg, err := config.Parse("test.toml", []byte(fmt.Sprintf("version = 1\n[host]\ncache_dir = %q\n", cache)))
	if err != nil {
		t.Fatal(err)
	}
	sys, err := system.New(cfg, system.Options{EngineOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if sys.Engine == nil || sys.Engine.Cache() == nil || sys.Engine.Cache().Dir() != cache {
		t.Fatalf("engine %v, want one with the compile cache %s", sys.Engine, cache)
	}
	if sys.Host != nil || sys.Hub != nil || sys.Providers != nil || sys.Toolings != nil || sys.Audit != nil {
		t.Fatalf("EngineOnly built more than the engine: %+v", sys)
	}
	if err := sys.Close(); err != nil {
		t.Fatal(err)
	}
	<-sys.Engine.Released()
}
