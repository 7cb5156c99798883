package daemon

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestClusterReload: a reload on every host of a cluster that adds an
// agent and changes one another host runs returns (it deadlocked: the
// reload asked whether the agent runs on every host under the lock it
// held), the added agent is placed on one host and answers through
// either, and the changed one answers after it.
func TestClusterReload(t *testing.T) {
	e := etcdtest.Start(t, 1)
	echo := testenv.Agent(t, "agents", "echo")
	agent := func(name, grace string) string {
		return fmt.Sprintf("[agent.%s]\ncomponent = %q\nstop_grace = %q\n\n", name, echo, grace)
	}
	hosts := []*fwdHost{
		startFwdHost(t, "a", e.Endpoints(), agent("echo", "1s")),
		startFwdHost(t, "b", e.Endpoints(), agent("echo", "1s")),
	}
	settled(t, hosts)
	ownerOf(t, hosts, "echo")

	for _, h := range hosts {
		old, err := os.ReadFile(h.path)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Replace(string(old), agent("echo", "1s"), agent("echo", "2s")+agent("added", "1s"), 1)
		if text == string(old) {
			t.Fatal("the config's echo agent was not found to change")
		}
		if err := os.WriteFile(h.path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range hosts {
		done := make(chan error, 1)
		go func() { done <- h.r.d.Reload() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("reload on %s: %v", h.name, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("reload on %s did not return in 30 s", h.name)
		}
	}

	ctx := t.Context()
	for _, name := range []string{"added", "echo"} {
		owner := ownerOf(t, hosts, name)
		for _, h := range hosts {
			st, err := h.ctl.Send(ctx, name, "hi", control.SendOptions{})
			if err != nil {
				t.Fatalf("%s through %s (owner %s): %v", name, h.name, owner.name, err)
			}
			if st.Status != message.StatusDone || st.Reply != "echo: hi" {
				t.Errorf("%s through %s: %+v", name, h.name, st)
			}
		}
	}
}
