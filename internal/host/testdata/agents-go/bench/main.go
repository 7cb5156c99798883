// bench: the Go port of testdata/agents/bench.js, for the host's
// benchmarks: tool calls in a loop, each round timed inside the guest.
// Input: JSON {"tooling", "tool", "arguments", "n", "batch"}: n rounds; a
// round is one CallToolBlocking when batch is 0, else batch CallTool calls
// followed by Recv until all their envelopes are in. Output: JSON {"ns":
// [per-round nanoseconds], "errors": count}.
package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolhostd/toolhostd/sdk/go/toolhost"
)

type options struct {
	Tooling   string          `json:"tooling"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	N         int             `json:"n"`
	Batch     int             `json:"batch"`
}

func bench(input string) (string, error) {
	var o options
	if err := json.Unmarshal([]byte(input), &o); err != nil {
		return "", err
	}
	t, err := toolhost.Get(o.Tooling)
	if err != nil {
		return "", err
	}
	defer t.Close()
	args := string(o.Arguments)
	if args == "" {
		args = "{}"
	}
	ns := make([]int64, 0, o.N)
	errors := 0
	for range o.N {
		start := time.Now()
		if o.Batch == 0 {
			if _, err := t.CallToolBlocking(o.Tool, args); err != nil {
				errors++
			}
		} else {
			waiting := map[string]bool{}
			for range o.Batch {
				id, err := t.CallTool(o.Tool, args)
				if err != nil {
					return "", err
				}
				waiting[id] = true
			}
			for len(waiting) > 0 {
				env, ok := toolhost.Recv(30 * time.Second)
				if !ok {
					return "", fmt.Errorf("timed out with %d results missing", len(waiting))
				}
				if _, ok := env.Event.(toolhost.ToolResultEvent); !ok {
					errors++
				}
				delete(waiting, env.ID)
			}
		}
		ns = append(ns, time.Since(start).Nanoseconds())
	}
	b, err := json.Marshal(map[string]any{"ns": ns, "errors": errors})
	return string(b), err
}

func init() { toolhost.Run(bench) }

func main() {}
