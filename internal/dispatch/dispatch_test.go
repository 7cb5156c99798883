package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thejerf/suture/v4"
	"go.uber.org/goleak"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/dispatch"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/supervisor"
	"github.com/toolhostd/toolhostd/internal/system"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// agents are a real host's supervisor of one agent whose component does
// not exist (it fails at its start, as a load failure does) and of one
// that never gets a service, and a router delivering through a
// Dispatcher over them.
func agents(t *testing.T, wait time.Duration) (*supervisor.Supervisor, *message.Router) {
	t.Helper()
	dir := t.TempDir()
	cfg, err := config.Parse("test.toml", fmt.Appendf(nil, "version = 1\n[host]\ncache_dir = %q\n", dir))
	if err != nil {
		t.Fatal(err)
	}
	sys, err := system.New(cfg, system.Options{TemporaryStore: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sys.Close() })
	agent := func(name, component string) *config.Agent {
		return &config.Agent{
			Name:         name,
			Component:    component,
			Messaging:    config.Messaging{Accepts: []string{message.SenderAPI}, MaxMessageBytes: 64},
			AgentRestart: config.AgentRestart{Restart: "never"},
		}
	}
	sup := supervisor.New(map[string]*config.Agent{
		"broken": agent("broken", filepath.Join(dir, "missing.wasm")),
		"later":  agent("later", filepath.Join(dir, "later.wasm")),
	}, supervisor.Options{Host: sys.Host, Config: func(in supervisor.Instance) host.AgentConfig {
		return sys.AgentConfig(system.Agent{Name: in.Agent, Config: in.Config, Env: in.Env, Policy: in.Policy, Limit: in.Limit})
	}})
	return sup, message.NewRouter(dispatch.New(dispatch.Options{Agents: sup, Wait: wait}), message.Options{})
}

func send(r *message.Router, agent, content string) error {
	_, _, err := r.Send(context.Background(), message.Request{Agent: agent, Sender: message.SenderAPI, Content: content})
	return err
}

func TestTarget(t *testing.T) {
	sup, _ := agents(t, 0)
	d := dispatch.New(dispatch.Options{Agents: sup})
	tgt, err := d.Target("broken")
	if err != nil || tgt.MaxMessageBytes != 64 || len(tgt.Accepts) != 1 || tgt.Accepts[0] != message.SenderAPI {
		t.Errorf("Target(broken) = %+v, %v", tgt, err)
	}
	if _, err := d.Target("nobody"); !errors.Is(err, message.ErrUnknownAgent) {
		t.Errorf("Target(nobody): %v, want unknown agent", err)
	}
}

func TestDeliver(t *testing.T) {
	sup, r := agents(t, 50*time.Millisecond)

	// Before the supervisor runs, a message waits for its agent's service,
	// then is refused, saying how long it waited.
	if err := send(r, "later", "hi"); tooling.AsError(err).Code != tooling.CodeUnavailable ||
		!strings.Contains(err.Error(), "did not start within 50ms") {
		t.Errorf("to an agent before its start: %v", err)
	}

	root := suture.NewSimple("test")
	ctx, cancel := context.WithCancel(context.Background())
	done := root.ServeBackground(ctx)
	t.Cleanup(func() { sup.Shutdown(); sup.Detach(); cancel(); <-done })
	sup.Run(root, []string{"broken"})
	testenv.Eventually(t, 10*time.Second, "broken failed", func() bool {
		s, _ := sup.State("broken")
		return s == supervisor.Failed
	})

	for _, c := range []struct {
		name, agent, content string
		code                 tooling.ErrorCode
		want                 []string
		is                   error
	}{
		{name: "unknown agent", agent: "nobody", content: "hi", code: tooling.CodeNotFound, want: []string{`no agent "nobody"`}, is: message.ErrUnknownAgent},
		{name: "failed agent says why", agent: "broken", content: "hi", code: tooling.CodeUnavailable,
			want: []string{`agent "broken" is failed:`, "missing.wasm"}, is: message.ErrUnavailable},
		{name: "never started", agent: "later", content: "hi", code: tooling.CodeUnavailable, want: []string{`agent "later" is stopped`}},
		{name: "too large", agent: "broken", content: strings.Repeat("x", 65), code: tooling.CodeInvalidArgument,
			want: []string{"max_message_bytes = 64"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := send(r, c.agent, c.content)
			if err == nil {
				t.Fatal("delivered")
			}
			if got := tooling.AsError(err).Code; got != c.code {
				t.Errorf("code %s, want %s (%v)", got, c.code, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v, want it to say %q", err, w)
				}
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("%v is not %v", err, c.is)
			}
		})
	}

	// An operator's stop leaves it stopped: refused as such, at once.
	if err := sup.Stop("broken"); err != nil {
		t.Fatal(err)
	}
	if err := send(r, "broken", "hi"); !strings.Contains(fmt.Sprint(err), `agent "broken" is stopped`) {
		t.Errorf("to a stopped agent: %v", err)
	}
}
