// fanout: queues N calls with CallTool, queues one slow call and cancels
// it, then collects every result from the inbox by id (the Go port of
// examples/agents/fanout.js). Input (JSON, optional): {"tooling", "tool",
// "arguments", "n", "slow": {"tool", "arguments"}}.
package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/toolhostd/toolhostd/sdk/go/toolhost"
)

type slowCall struct {
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
}

type options struct {
	Tooling   string         `json:"tooling"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
	N         int            `json:"n"`
	Slow      *slowCall      `json:"slow"`
}

func defaults() options {
	return options{
		Tooling:   "everything",
		Tool:      "echo",
		Arguments: map[string]any{"message": "fan"},
		N:         10,
		Slow:      &slowCall{Tool: "trigger-long-running-operation", Arguments: map[string]any{"duration": 60, "steps": 1}},
	}
}

func fanout(input string) (string, error) {
	o := defaults()
	if strings.TrimSpace(input) != "" {
		// As JS's {...defaults, ...input}: a key given replaces its
		// default wholesale (json.Unmarshal alone would merge maps).
		var given map[string]json.RawMessage
		if err := json.Unmarshal([]byte(input), &given); err != nil {
			return "", err
		}
		if _, ok := given["arguments"]; ok {
			o.Arguments = nil
		}
		if _, ok := given["slow"]; ok {
			o.Slow = nil
		}
		if err := json.Unmarshal([]byte(input), &o); err != nil {
			return "", err
		}
	}
	t, err := toolhost.Get(o.Tooling)
	if err != nil {
		return "", err
	}
	defer t.Close()
	waiting := map[string]int{}
	for i := range o.N {
		args := maps.Clone(o.Arguments)
		if args == nil {
			args = map[string]any{}
		}
		msg, _ := args["message"].(string)
		args["message"] = fmt.Sprintf("%s#%d", msg, i)
		id, err := t.CallTool(o.Tool, args)
		if err != nil {
			return "", err
		}
		waiting[id] = i
	}
	cancelled := "none"
	if o.Slow != nil {
		args := o.Slow.Arguments
		if args == nil {
			args = map[string]any{}
		}
		slow, err := t.CallTool(o.Slow.Tool, args)
		if err != nil {
			return "", err
		}
		openBefore := t.IsOpen(slow)
		ok := t.Cancel(slow)
		cancelled = fmt.Sprintf("open=%v cancel=%v open-after=%v", openBefore, ok, t.IsOpen(slow))
	}
	results, errs := 0, 0
	for len(waiting) > 0 {
		env, ok := toolhost.Recv(30 * time.Second)
		if !ok {
			return "", fmt.Errorf("timed out with %d results missing", len(waiting))
		}
		if _, isShutdown := env.Event.(toolhost.ShutdownEvent); isShutdown {
			return "", fmt.Errorf("shut down with %d results missing", len(waiting))
		}
		if _, known := waiting[env.ID]; !known {
			return "", fmt.Errorf("unexpected envelope %s (%s)", env.ID, env.Event.Tag())
		}
		delete(waiting, env.ID)
		if _, isResult := env.Event.(toolhost.ToolResultEvent); isResult {
			results++
		} else {
			errs++
		}
	}
	toolhost.Logf(toolhost.LevelInfo, "fanout: %d results, %d errors", results, errs)
	return fmt.Sprintf("calls=%d results=%d errors=%d slow: %s", o.N, results, errs, cancelled), nil
}

func init() { toolhost.Run(fanout) }

func main() {}
