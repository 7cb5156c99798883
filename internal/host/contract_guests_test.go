package host

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	wt "github.com/toolhostd/toolhostd/internal/host/wasmtime"
)

// Contract tests (see contract_sync_test.go) where the guests legitimately
// differ: uncaught exceptions and memory limits.

func TestUncaughtExceptions(t *testing.T) {
	s := env(t)
	for _, what := range []string{"host-error", "error"} {
		t.Run(what, func(t *testing.T) {
			name := "uncaught-" + what
			a := s.startProbe(t, probeOpts{name: name}, step{"op": "throw", "what": what, "message": "boom"})
			_, err := waitAgent(t, a, 20*time.Second)
			var tr *wt.Trap
			if !errors.As(err, &tr) || len(tr.Backtrace) == 0 {
				t.Fatalf("err = %v (%T), want a trap with a backtrace", err, err)
			}
			var stderr []string
			for _, e := range s.logs.All() {
				if m := e.ContextMap(); m["agent"] == name && m["stream"] == "stderr" {
					stderr = append(stderr, e.Message)
				}
			}
			if !strings.Contains(strings.Join(stderr, "\n"), "expected a string") {
				t.Errorf("the guest's stderr was not logged with its name: %q", stderr)
			}
		})
	}
}

func TestJSMemoryLimit(t *testing.T) {
	s := env(t)
	p := s.program(t, "test-agents", "probe")
	alloc := probeInput(t, []step{{"op": "alloc", "mb": 100}, {"op": "pending"}})
	limited := s.host.Start(p, AgentConfig{Name: "limited", MemoryLimit: 48 << 20}, alloc)
	free := s.host.Start(p, AgentConfig{Name: "unlimited"}, alloc)
	for _, tc := range []struct {
		a    *Agent
		want []string
	}{
		{limited, []string{"thrown out of memory", "0"}},
		{free, []string{"100", "0"}},
	} {
		out, err := waitAgent(t, tc.a, 30*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", tc.a.Name(), err)
		}
		var rs []stepResult
		if err := json.Unmarshal([]byte(out), &rs); err != nil {
			t.Fatal(err)
		}
		checkSteps(t, rs, tc.want...)
	}
}
