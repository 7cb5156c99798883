package contract_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/policy"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

func uris(rs []tooling.ResourceInfo) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.URI
	}
	slices.Sort(out)
	return out
}

// TestPolicyUpdateFiltersDeliveries: two agents share one subscription and
// one list subscription; narrowing one agent's resources while it runs
// stops its updates for the uri no longer allowed and filters its list
// updates, and the other agent is not affected.
func TestPolicyUpdateFiltersDeliveries(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	pol := policy.New("a", map[string]policy.Rules{"mem": {Resources: []string{"test://r*"}}}, policy.Options{})
	ina := inbox.New(16)
	a := contract.NewAgent(e.hub, "a", ina, contract.Options{Policy: pol})
	t.Cleanup(a.Close)
	ha, err := a.Get("mem")
	if err != nil {
		t.Fatal(err)
	}
	_, hb, inb := e.agent(t, "b", 16)

	subA, err := ha.SubscribeResource(ctx, "test://r0")
	if err != nil {
		t.Fatal(err)
	}
	subB, err := hb.SubscribeResource(ctx, "test://r0")
	if err != nil {
		t.Fatal(err)
	}
	e.srv.Update(t, "test://r0", "v1")
	if env := recv(t, ina); env.ID != subA {
		t.Fatalf("a got %+v", env)
	}
	if env := recv(t, inb); env.ID != subB {
		t.Fatalf("b got %+v", env)
	}

	pol.Update(map[string]policy.Rules{"mem": {Resources: []string{"test://r1"}}})
	e.srv.Update(t, "test://r0", "v2")
	if env := recv(t, inb); env.ID != subB {
		t.Fatalf("b got %+v", env)
	}
	quiet(t, ina, 200*time.Millisecond)
	if _, err := ha.ReadResource(ctx, "test://r0"); codeOf(t, err) != tooling.CodeDenied {
		t.Errorf("a reads test://r0 after the narrowing: %v", err)
	}
	rs, err := ha.ListResources(ctx)
	if err != nil || !slices.Equal(uris(rs), []string{"test://r1"}) {
		t.Errorf("a lists %v (%v)", uris(rs), err)
	}

	la, err := ha.SubscribeResourceList()
	if err != nil {
		t.Fatal(err)
	}
	lb, err := hb.SubscribeResourceList()
	if err != nil {
		t.Fatal(err)
	}
	e.srv.AddResource("test://x", "new")
	got := map[string][]string{}
	for _, in := range []*inbox.Inbox{ina, inb} {
		env := recv(t, in)
		ev, ok := env.Event.(inbox.ResourceListUpdated)
		if !ok {
			t.Fatalf("event %+v", env)
		}
		got[env.ID] = uris(ev.Resources)
	}
	if !slices.Equal(got[la], []string{"test://r1"}) {
		t.Errorf("a's list update %v", got[la])
	}
	if !slices.Equal(got[lb], []string{"test://r0", "test://r1", "test://r2", "test://x"}) {
		t.Errorf("b's list update %v", got[lb])
	}
}
