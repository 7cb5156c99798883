package gateway_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/gateway"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestHubLifecycle: the hub serves its toolings by name with config's
// default limits, adds and removes toolings while it serves (a removed
// one's operations are unavailable), runs Go's work while it serves and
// waits for it when Serve returns, and refuses work and additions after.
func TestHubLifecycle(t *testing.T) {
	hub := gateway.NewHub([]gateway.Entry{{Tooling: tooling.Idle("b")}, {Tooling: tooling.Idle("a")}}, nil)
	if got := hub.Names(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("Names = %v, want [a b]", got)
	}
	s, ok := hub.Lookup("a")
	if !ok {
		t.Fatal("no tooling a")
	}
	if lim := s.Limits(); lim.MaxConcurrentCalls != config.DefaultMaxConcurrentCalls || lim.CallTimeout != config.DefaultCallTimeout {
		t.Errorf("limits %+v, want config's defaults", lim)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- hub.Serve(ctx) }()

	if err := hub.AddTooling(gateway.Entry{Tooling: tooling.Idle("c"), Limits: gateway.Limits{MaxConcurrentCalls: 2}}); err != nil {
		t.Fatal(err)
	}
	if err := hub.AddTooling(gateway.Entry{Tooling: tooling.Idle("c")}); !errors.Is(err, gateway.ErrToolingExists) {
		t.Fatalf("adding c twice: %v, want ErrToolingExists", err)
	}
	c, _ := hub.Lookup("c")
	if err := hub.RemoveTooling("c"); err != nil {
		t.Fatal(err)
	}
	if herr := c.Removed(); herr == nil || herr.Code != tooling.CodeUnavailable {
		t.Fatalf("a removed tooling's error: %v, want unavailable", herr)
	}
	if _, ok := hub.Lookup("c"); ok {
		t.Fatal("c is still served after its removal")
	}

	release := make(chan struct{})
	finished := make(chan struct{})
	if !hub.Go(func() { <-release; close(finished) }) {
		t.Fatal("Go refused work while the hub serves")
	}
	cancel()
	select {
	case <-done:
		t.Fatal("Serve returned before the work of Go ended")
	case <-hub.Context().Done(): // the agents' parent context ended at once
	}
	close(release)
	testenv.Recv(t, done, 10*time.Second, "Serve to return")
	testenv.Recv(t, finished, time.Second, "the work of Go")
	if hub.Go(func() { t.Error("work ran after Serve returned") }) {
		t.Error("Go accepted work after Serve returned")
	}
	if err := hub.AddTooling(gateway.Entry{Tooling: tooling.Idle("d")}); !errors.Is(err, gateway.ErrHubStopped) {
		t.Errorf("adding after Serve returned: %v, want ErrHubStopped", err)
	}
}
