package host

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// Contract tests (see contract_sync_test.go): asynchronous calls, the inbox
// by id, cancel and timeouts.

func TestProbeCallAndRecvByID(t *testing.T) {
	forGuests(t, func(t *testing.T, g guest) {
		s := env(t)
		a := s.startProbe(t, probeOpts{guest: g},
			step{"op": "get", "name": "mem", "as": "t"},
			step{"op": "call-tool", "h": "t", "tool": "gate", "args": map[string]any{"tag": "recv-by-id"}, "as": "g"},
			step{"op": "call-tool", "h": "t", "tool": "echo", "args": map[string]any{"text": "a"}, "as": "a"},
			step{"op": "call-tool", "h": "t", "tool": "fail", "args": map[string]any{"text": "b"}, "as": "b"},
			step{"op": "is-open", "h": "t", "id": "g"},
			step{"op": "call-tool-blocking", "h": "t", "tool": "gate", "args": map[string]any{"tag": "recv-by-id-hold"}},
			step{"op": "recv-until", "id": "g", "timeout": 20000},
			step{"op": "is-open", "h": "t", "id": "g"},
			step{"op": "cancel", "h": "t", "id": "g"},
			step{"op": "pending"},
			step{"op": "try-recv"},
		)
		s.mem.AwaitGate(t, "recv-by-id")
		s.mem.AwaitGate(t, "recv-by-id-hold")
		// Both other results are in before g's: the guest's recv-until skips
		// them (in arrival order) to reach g.
		testenv.Eventually(t, 20*time.Second, "two envelopes", func() bool { return a.Inbox().Pending() == 2 })
		s.mem.OpenGate("recv-by-id")
		testenv.Eventually(t, 20*time.Second, "g's envelope", func() bool { return a.Inbox().Pending() == 3 })
		s.mem.OpenGate("recv-by-id-hold")
		rs := finish(t, a)
		checkSteps(t, rs, `"t"`, `"g"`, `"a"`, `"b"`, "true", "*", "*", "false", "false", "0", "null")
		got := okAs[struct {
			Got     envelope   `json:"got"`
			Skipped []envelope `json:"skipped"`
		}](t, rs[6])
		if envSummary(got.Got) != "g tool-result gate passed recv-by-id" {
			t.Errorf("recv-until g got %s", envSummary(got.Got))
		}
		// a and b arrive in the order they complete.
		var skipped []string
		for _, e := range got.Skipped {
			skipped = append(skipped, envSummary(e))
		}
		slices.Sort(skipped)
		if strings.Join(skipped, "; ") != "a tool-result echo a; b tool-result fail failed: b (isError)" {
			t.Errorf("skipped %q", skipped)
		}
	})
}

func TestProbeCancel(t *testing.T) {
	forGuests(t, func(t *testing.T, g guest) {
		s := env(t)
		a := s.startProbe(t, probeOpts{guest: g},
			step{"op": "get", "name": "mem", "as": "t"},
			step{"op": "call-tool", "h": "t", "tool": "slow", "args": map[string]any{"tag": "cancel-open"}, "as": "slow"},
			step{"op": "call-tool", "h": "t", "tool": "echo", "args": map[string]any{"text": "e1"}, "as": "e1"},
			step{"op": "call-tool", "h": "t", "tool": "echo", "args": map[string]any{"text": "e2"}, "as": "e2"},
			step{"op": "call-tool-blocking", "h": "t", "tool": "gate", "args": map[string]any{"tag": "cancel-1"}},
			step{"op": "is-open", "h": "t", "id": "slow"},
			step{"op": "cancel", "h": "t", "id": "slow"},
			step{"op": "is-open", "h": "t", "id": "slow"},
			step{"op": "cancel", "h": "t", "id": "slow"},
			step{"op": "pending"},
			step{"op": "cancel", "h": "t", "id": "e1"}, // delivered to the inbox, not received
			step{"op": "pending"},
			step{"op": "recv", "timeout": 0},
			step{"op": "cancel", "h": "t", "id": "e2"}, // already received
			step{"op": "call-tool-blocking", "h": "t", "tool": "gate", "args": map[string]any{"tag": "cancel-2"}},
			step{"op": "recv", "timeout": 300},
			step{"op": "pending"},
		)
		s.mem.AwaitGate(t, "cancel-1")
		testenv.Recv(t, s.mem.SlowStarted("cancel-open"), 20*time.Second, "the slow call to reach the server")
		testenv.Eventually(t, 20*time.Second, "both echo results", func() bool { return a.Inbox().Pending() == 2 })
		s.mem.OpenGate("cancel-1")
		s.mem.AwaitGate(t, "cancel-2")
		// The server saw notifications/cancelled: go-sdk ended the handler's
		// context.
		testenv.Recv(t, s.mem.SlowCancelled("cancel-open"), 20*time.Second, "the server to see the cancellation")
		s.mem.OpenGate("cancel-2")
		checkSteps(t, finish(t, a),
			`"t"`, `"slow"`, `"e1"`, `"e2"`, "*",
			"true", "true", "false", "false", "2",
			"true", "1", "e2 tool-result echo e2", "false",
			"*", "null", "0")
	})
}

func TestProbeCallTimeout(t *testing.T) {
	forGuests(t, func(t *testing.T, g guest) {
		s := env(t)
		rs := s.probe(t, probeOpts{guest: g},
			step{"op": "get", "name": "mem-short", "as": "t"},
			step{"op": "call-tool-blocking", "h": "t", "tool": "slow", "args": map[string]any{"tag": "timeout-blocking"}},
			step{"op": "call-tool", "h": "t", "tool": "slow", "args": map[string]any{"tag": "timeout-async"}, "as": "c"},
			step{"op": "recv", "timeout": 20000},
			step{"op": "is-open", "h": "t", "id": "c"},
		)
		checkSteps(t, rs, `"t"`, "err timeout", `"c"`, "c error timeout", "false")
		testenv.Recv(t, s.mem.SlowCancelled("timeout-blocking"), 20*time.Second, "the server to see the blocking call cancelled")
		testenv.Recv(t, s.mem.SlowCancelled("timeout-async"), 20*time.Second, "the server to see the async call cancelled")
	})
}

// TestManyAgents: agents running one Program at once keep to their own
// inboxes and handles.
func TestManyAgents(t *testing.T) {
	forGuests(t, func(t *testing.T, g guest) {
		s := env(t)
		const n = 12
		agents := make([]*Agent, n)
		for i := range agents {
			text := fmt.Sprint("agent-", i)
			agents[i] = s.startProbe(t, probeOpts{guest: g, name: text},
				step{"op": "get", "name": "mem", "as": "t"},
				step{"op": "call-tool", "h": "t", "tool": "echo", "args": map[string]any{"text": text}, "as": "c"},
				step{"op": "call-tool-blocking", "h": "t", "tool": "echo", "args": map[string]any{"text": text + "-blocking"}},
				step{"op": "recv", "timeout": 20000},
				step{"op": "recv", "timeout": 0},
				step{"op": "log", "message": text},
			)
		}
		for i, a := range agents {
			rs := finish(t, a)
			text := fmt.Sprint("agent-", i)
			checkSteps(t, rs, `"t"`, `"c"`, "*", "c tool-result echo "+text, "null", "true")
			if got, _ := valueText(okAs[struct{ Value string }](t, rs[2]).Value); got != text+"-blocking" {
				t.Errorf("agent %d: blocking echo %q", i, got)
			}
		}
	})
}
