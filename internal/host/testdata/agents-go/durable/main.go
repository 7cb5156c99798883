// durable: the Go port of testdata/agents/durable.js, for the durable-agent
// tests (cmd/toolhostd). Input: JSON {"tool", "n"}: it calls tool of its
// tooling "count" n times with {"i": i}, keeping each result's text
// followed by the wall clock's time and a random number (" t=... r=...",
// as the guest read them), or a failed call's "code: message"; it logs
// each ("result i: ..."), then calls "done" with {"results": [...]} and
// returns them joined by ",".
package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/toolhostd/toolhostd/sdk/go/toolhost"
)

type options struct {
	Tool string `json:"tool"`
	N    int    `json:"n"`
}

func loop(input string) (string, error) {
	var o options
	if err := json.Unmarshal([]byte(input), &o); err != nil {
		return "", err
	}
	t, err := toolhost.Get("count")
	if err != nil {
		return "", err
	}
	defer t.Close()
	results := make([]string, 0, o.N)
	for i := 1; i <= o.N; i++ {
		res, err := t.CallToolBlocking(o.Tool, map[string]int{"i": i})
		if err != nil {
			results = append(results, err.Error())
		} else {
			var v struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			}
			if err := json.Unmarshal([]byte(res.Value), &v); err != nil {
				return "", err
			}
			var text strings.Builder
			for _, c := range v.Content {
				text.WriteString(c.Text)
			}
			results = append(results, fmt.Sprintf("%s t=%d r=%v", text.String(), time.Now().UnixMilli(), rand.Float64()))
		}
		toolhost.Logf(toolhost.LevelInfo, "result %d: %s", i, results[i-1])
	}
	if _, err := t.CallToolBlocking("done", map[string]any{"results": results}); err != nil {
		return "", err
	}
	return strings.Join(results, ","), nil
}

func init() { toolhost.Run(loop) }

func main() {}
