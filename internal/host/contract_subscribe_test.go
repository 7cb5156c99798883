package host

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// Contract tests (see contract_sync_test.go): subscriptions, coalescing and
// re-subscription.

func TestProbeSubscribe(t *testing.T) {
	forGuests(t, func(t *testing.T, g guest) {
		s := env(t)
		const uri = "test://sub/basic"
		a := s.startProbe(t, probeOpts{guest: g},
			step{"op": "get", "name": "mem", "as": "t"},
			step{"op": "subscribe", "h": "t", "uri": uri, "as": "s"},
			step{"op": "subscribe", "h": "t", "uri": uri, "as": "s2"},
			step{"op": "subscribe-list", "h": "t", "as": "l"},
			step{"op": "call-tool-blocking", "h": "t", "tool": "gate", "args": map[string]any{"tag": "sub-1"}},
			step{"op": "recv", "timeout": 20000},
			step{"op": "recv", "timeout": 20000},
			step{"op": "recv-until", "id": "l", "timeout": 20000},
			step{"op": "unsubscribe", "h": "t", "id": "s"},
			step{"op": "unsubscribe", "h": "t", "id": "s"},
			step{"op": "unsubscribe-list", "h": "t", "id": "l"},
			step{"op": "unsubscribe-list", "h": "t", "id": "l"},
			step{"op": "call-tool-blocking", "h": "t", "tool": "gate", "args": map[string]any{"tag": "sub-2"}},
			step{"op": "recv", "timeout": 20000},
			step{"op": "recv", "timeout": 300},
			step{"op": "unsubscribe", "h": "t", "id": "s2"},
		)
		s.mem.AwaitGate(t, "sub-1")
		if n := s.mem.Subscribes(uri); n != 1 {
			t.Fatalf("server saw %d subscribes for two subscriptions, want 1", n)
		}
		s.mem.Update(t, uri, "v1")
		testenv.Eventually(t, 20*time.Second, "the update in both subscriptions", func() bool { return a.Inbox().Pending() == 2 })
		s.mem.AddResource("test://added/subscribe", "new") // list_changed
		testenv.Eventually(t, 20*time.Second, "the list update", func() bool { return a.Inbox().Pending() == 3 })
		s.mem.OpenGate("sub-1")
		s.mem.AwaitGate(t, "sub-2")
		if n := s.mem.Unsubscribes(uri); n != 0 {
			t.Fatalf("server saw %d unsubscribes with one subscription left", n)
		}
		s.mem.Update(t, uri, "v2")
		testenv.Eventually(t, 20*time.Second, "the update for s2", func() bool { return a.Inbox().Pending() == 1 })
		s.mem.AddResource("test://added/subscribe-2", "new") // no envelope: l ended
		s.mem.OpenGate("sub-2")
		rs := finish(t, a)
		checkSteps(t, rs, `"t"`, `"s"`, `"s2"`, `"l"`, "*",
			"*", "*", "*",
			"true", "false", "true", "false", "*",
			"s2 resource-updated test://sub/basic=v2", "null", "true")
		// One envelope per subscription, in fan-out order (unspecified).
		u := []string{envSummary(okAs[envelope](t, rs[5])), envSummary(okAs[envelope](t, rs[6]))}
		slices.Sort(u)
		if u[0] != "s resource-updated test://sub/basic=v1" || u[1] != "s2 resource-updated test://sub/basic=v1" {
			t.Errorf("updates %q, want v1 for s and for s2", u)
		}
		got := okAs[struct {
			Got envelope `json:"got"`
		}](t, rs[7])
		if got.Got.ID != "l" || got.Got.Tag != "resource-list-updated" || !strings.Contains(string(got.Got.Val), "test://added/subscribe") {
			t.Errorf("list update %+v", got.Got)
		}
		testenv.Eventually(t, 20*time.Second, "the MCP unsubscribe after the last subscription", func() bool {
			return s.mem.Unsubscribes(uri) == 1
		})
	})
}

// TestProbeCoalescing: several updates while the guest does not recv give
// one envelope with the newest content.
func TestProbeCoalescing(t *testing.T) {
	forGuests(t, func(t *testing.T, g guest) {
		s := env(t)
		const uri = "test://sub/coalesce"
		a := s.startProbe(t, probeOpts{guest: g},
			step{"op": "get", "name": "mem", "as": "t"},
			step{"op": "subscribe", "h": "t", "uri": uri, "as": "s"},
			step{"op": "subscribe-list", "h": "t", "as": "l"},
			step{"op": "call-tool", "h": "t", "tool": "echo", "args": map[string]any{"text": "between"}, "as": "e"},
			step{"op": "call-tool-blocking", "h": "t", "tool": "gate", "args": map[string]any{"tag": "coalesce"}},
			step{"op": "pending"},
			step{"op": "recv", "timeout": 0},
			step{"op": "recv", "timeout": 0},
			step{"op": "recv", "timeout": 0},
			step{"op": "recv", "timeout": 200},
		)
		s.mem.AwaitGate(t, "coalesce")
		testenv.Eventually(t, 20*time.Second, "the echo result", func() bool { return a.Inbox().Pending() == 1 })
		s.mem.Update(t, uri, "u1")
		testenv.Eventually(t, 20*time.Second, "the first update", func() bool { return a.Inbox().Pending() == 2 })
		coalesced := func(n int) func() bool {
			return func() bool { return a.Inbox().Stats().Coalesced == uint64(n) }
		}
		for i, text := range []string{"u2", "u3", "u4"} {
			s.mem.Update(t, uri, text)
			testenv.Eventually(t, 20*time.Second, "a coalesced update", coalesced(i+1))
		}
		s.mem.AddResource("test://added/coalesce-1", "x")
		testenv.Eventually(t, 20*time.Second, "the first list update", func() bool { return a.Inbox().Pending() == 3 })
		s.mem.AddResource("test://added/coalesce-2", "x")
		testenv.Eventually(t, 20*time.Second, "a coalesced list update", coalesced(4))
		s.mem.OpenGate("coalesce")
		rs := finish(t, a)
		// Arrival order is kept (an update replaces its payload in place); the
		// newest content wins; the tool result is untouched.
		checkSteps(t, rs, `"t"`, `"s"`, `"l"`, `"e"`, "*", "3",
			"e tool-result echo between", "s resource-updated test://sub/coalesce=u4", "l resource-list-updated *", "null")
		list := okAs[envelope](t, rs[8])
		if !strings.Contains(string(list.Val), "test://added/coalesce-2") {
			t.Errorf("the list update does not carry the newest list: %s", list.Val)
		}
	})
}

// TestStopDuringSubscribe: an agent stopped while its subscribe-resource
// waits on the server gets cancelled at once, and no MCP subscription
// outlives it: the tooling lets the request finish on the server (a server
// may complete a subscribe whatever the client says) and withdraws the
// subscription nobody holds.
func TestStopDuringSubscribe(t *testing.T) {
	forGuests(t, func(t *testing.T, g guest) {
		s := env(t)
		for _, uri := range []string{slowSubscribeURI, stubbornSubscribeURI} {
			t.Run(uri, func(t *testing.T) {
				a := s.startProbe(t, probeOpts{guest: g},
					step{"op": "get", "name": "mem", "as": "t"},
					step{"op": "subscribe", "h": "t", "uri": uri, "as": "s"},
					step{"op": "recv", "timeout": 10000},
				)
				g := s.mem.Gate(uri)
				testenv.Recv(t, g.Entered(), 20*time.Second, "the subscribe to reach the server")
				a.Stop()
				checkSteps(t, finish(t, a), `"t"`, "err cancelled", "00000000-0000-0000-0000-000000000000 shutdown")
				g.Release() // the server completes the subscribe after the agent left
				testenv.Recv(t, g.Done(), 20*time.Second, "the subscribe handler to return")
				testenv.Eventually(t, 20*time.Second, "the abandoned subscription withdrawn", func() bool {
					return s.mem.Subscribes(uri) == 1 && s.mem.Unsubscribes(uri) == 1
				})
			})
		}
	})
}

// TestProbeResubscribeFails: after the session is lost, a subscription
// whose re-subscription fails gets one error envelope with its id; the
// others keep working.
func TestProbeResubscribeFails(t *testing.T) {
	forGuests(t, func(t *testing.T, g guest) {
		s := env(t)
		const bad, good = "test://sub/resubscribe", "test://sub/shared"
		a := s.startProbe(t, probeOpts{guest: g},
			step{"op": "get", "name": "mem", "as": "t"},
			step{"op": "subscribe", "h": "t", "uri": bad, "as": "bad"},
			step{"op": "subscribe", "h": "t", "uri": good, "as": "good"},
			step{"op": "call-tool-blocking", "h": "t", "tool": "gate", "args": map[string]any{"tag": "resubscribe"}},
			step{"op": "recv", "timeout": 20000},
			step{"op": "recv", "timeout": 20000},
			step{"op": "recv", "timeout": 300},
		)
		s.mem.AwaitGate(t, "resubscribe")
		s.mem.OpenGate("resubscribe")
		s.mem.RefuseSubscribe(bad, true)
		s.mem.DropSessions()
		// The tooling reconnects and re-subscribes good (a second subscribe
		// on the server); then an update of good reaches the guest.
		testenv.Eventually(t, 20*time.Second, "the re-subscription", func() bool { return s.mem.Subscribes(good) == 2 })
		s.mem.Update(t, good, "after the reconnect")
		rs := finish(t, a)
		checkSteps(t, rs, `"t"`, `"bad"`, `"good"`, "*", "*", "*", "null")
		got := []string{summary(rs[4]), summary(rs[5])} // in either order
		slices.Sort(got)
		if !strings.HasPrefix(got[0], "bad error ") || got[1] != "good resource-updated test://sub/shared=after the reconnect" {
			t.Fatalf("after the reconnect the guest got %q", got)
		}
		for _, name := range []string{"mem", "mem-short"} { // both sessions were on the server
			testenv.Eventually(t, 20*time.Second, name+" to be connected again", func() bool { return s.mcps[name].Status().Connected })
		}
	})
}
