package host

import (
	"errors"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/testenv"
	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// Contract tests (see contract_sync_test.go): handle drop, shutdown and the
// end of an agent.

// TestProbeHandleDrop: dropping a handle (jco's Symbol.dispose) cancels its
// calls and ends its subscriptions, on the server too.
func TestProbeHandleDrop(t *testing.T) {
	forGuests(t, func(t *testing.T, g guest) {
		s := env(t)
		const uri = "test://sub/drop"
		a := s.startProbe(t, probeOpts{guest: g},
			step{"op": "get", "name": "mem", "as": "t"},
			step{"op": "get", "name": "mem", "as": "u"},
			step{"op": "call-tool", "h": "t", "tool": "slow", "args": map[string]any{"tag": "drop"}, "as": "c"},
			step{"op": "subscribe", "h": "t", "uri": uri, "as": "s"},
			step{"op": "call-tool-blocking", "h": "u", "tool": "gate", "args": map[string]any{"tag": "drop-1"}},
			step{"op": "drop", "h": "t"},
			step{"op": "is-open", "h": "u", "id": "c"},
			step{"op": "call-tool-blocking", "h": "u", "tool": "gate", "args": map[string]any{"tag": "drop-2"}},
			step{"op": "recv", "timeout": 300},
			step{"op": "pending"},
		)
		s.mem.AwaitGate(t, "drop-1")
		testenv.Recv(t, s.mem.SlowStarted("drop"), 20*time.Second, "the slow call to start")
		s.mem.OpenGate("drop-1")
		s.mem.AwaitGate(t, "drop-2")
		testenv.Recv(t, s.mem.SlowCancelled("drop"), 20*time.Second, "the server to see the dropped handle's call cancelled")
		testenv.Eventually(t, 20*time.Second, "the MCP unsubscribe", func() bool { return s.mem.Unsubscribes(uri) == 1 })
		s.mem.Update(t, uri, "after drop")
		s.mem.OpenGate("drop-2")
		checkSteps(t, finish(t, a), `"t"`, `"u"`, `"c"`, `"s"`, "*", "true", "false", "*", "null", "0")
	})
}

// TestProbeShutdown: Stop gives the guest the shutdown envelope (the zero
// uuid), fails its blocking call with cancelled, and recv then returns
// none at once.
func TestProbeShutdown(t *testing.T) {
	forGuests(t, func(t *testing.T, g guest) {
		s := env(t)
		a := s.startProbe(t, probeOpts{guest: g, grace: 20 * time.Second},
			step{"op": "get", "name": "mem", "as": "t"},
			step{"op": "call-tool", "h": "t", "tool": "slow", "args": map[string]any{"tag": "shutdown"}, "as": "c"},
			step{"op": "call-tool-blocking", "h": "t", "tool": "gate", "args": map[string]any{"tag": "shutdown"}},
			step{"op": "recv"},
			step{"op": "recv"},
			step{"op": "recv", "timeout": 10000},
			step{"op": "try-recv"},
			step{"op": "pending"},
			step{"op": "call-tool-blocking", "h": "t", "tool": "echo", "args": map[string]any{"text": "late"}},
		)
		s.mem.AwaitGate(t, "shutdown")
		testenv.Recv(t, s.mem.SlowStarted("shutdown"), 20*time.Second, "the slow call to start")
		start := time.Now()
		a.Stop()
		rs := finish(t, a)
		checkSteps(t, rs, `"t"`, `"c"`, "err cancelled",
			"00000000-0000-0000-0000-000000000000 shutdown", "null", "null", "null", "0", "err cancelled")
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("recv after shutdown waited: the agent took %v to finish", d)
		}
		testenv.Recv(t, s.mem.SlowCancelled("shutdown"), 20*time.Second, "the server to see the agent's call cancelled")
	})
}

// TestAgentEndReleasesEverything: an agent that returns, and one that is
// interrupted while spinning, leave no call running and no subscription on
// the server.
func TestAgentEndReleasesEverything(t *testing.T) {
	forGuests(t, func(t *testing.T, g guest) {
		s := env(t)
		for _, tc := range []struct {
			name  string
			spin  bool
			uri   string
			check func(t *testing.T, out string, err error)
		}{
			{"returns", false, "test://sub/exit", func(t *testing.T, out string, err error) {
				if err != nil {
					t.Fatalf("run failed: %v", err)
				}
			}},
			{"interrupted", true, "test://sub/kill", func(t *testing.T, out string, err error) {
				var tr *wt.Trap
				if !errors.Is(err, ErrInterrupted) || !errors.As(err, &tr) || !wt.IsInterrupt(err) || len(tr.Backtrace) == 0 {
					t.Fatalf("err = %v, want ErrInterrupted carrying the interrupt trap and the guest backtrace", err)
				}
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tag := "end-" + tc.name
				steps := []step{
					{"op": "get", "name": "mem", "as": "t"},
					{"op": "call-tool", "h": "t", "tool": "slow", "args": map[string]any{"tag": tag}, "as": "c"},
					{"op": "subscribe", "h": "t", "uri": tc.uri, "as": "s"},
					{"op": "subscribe-list", "h": "t", "as": "l"},
					{"op": "call-tool-blocking", "h": "t", "tool": "gate", "args": map[string]any{"tag": tag}},
				}
				if tc.spin {
					steps = append(steps, step{"op": "spin"})
				}
				a := s.startProbe(t, probeOpts{guest: g, grace: 50 * time.Millisecond}, steps...)
				s.mem.AwaitGate(t, tag)
				testenv.Recv(t, s.mem.SlowStarted(tag), 20*time.Second, "the slow call to start")
				if s.mem.Subscribes(tc.uri) != 1 {
					t.Fatal("no MCP subscription")
				}
				s.mem.OpenGate(tag)
				if tc.spin {
					time.Sleep(100 * time.Millisecond) // into the spin loop
					a.Stop()
				}
				select {
				case <-a.Done():
				case <-time.After(30 * time.Second):
					t.Fatal("the agent did not end")
				}
				out, err := a.Wait()
				tc.check(t, out, err)
				testenv.Recv(t, s.mem.SlowCancelled(tag), 20*time.Second, "the server to see the call cancelled")
				testenv.Eventually(t, 20*time.Second, "the MCP unsubscribe", func() bool { return s.mem.Unsubscribes(tc.uri) == 1 })
			})
		}
	})
}
