// hello: lists the tools of each tooling it is given, calls one, and
// returns a summary (the Go port of examples/agents/hello.js). Input: JSON
// {"toolings": [...], "call": {"tooling", "tool", "arguments"}}; both keys
// are optional (defaults below).
package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolhostd/toolhostd/sdk/go/toolhost"
)

type call struct {
	Tooling   string         `json:"tooling"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
}

type options struct {
	Toolings []string `json:"toolings"`
	Call     *call    `json:"call"`
}

func defaults() options {
	return options{
		Toolings: []string{"everything", "filesystem"},
		Call:     &call{Tooling: "everything", Tool: "echo", Arguments: map[string]any{"message": "hello from a WebAssembly agent"}},
	}
}

func hello(input string) (string, error) {
	o := defaults()
	if strings.TrimSpace(input) != "" {
		// As JS's {...defaults, ...input}: a key given replaces its
		// default wholesale (json.Unmarshal alone would merge into the
		// default call's arguments).
		var given map[string]json.RawMessage
		if err := json.Unmarshal([]byte(input), &given); err != nil {
			return "", err
		}
		if _, ok := given["call"]; ok {
			o.Call = nil
		}
		if err := json.Unmarshal([]byte(input), &o); err != nil {
			return "", err
		}
	}
	var lines []string
	for _, name := range o.Toolings {
		t, err := toolhost.Get(name)
		if err != nil {
			lines = append(lines, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		tools, err := t.ListTools()
		if err != nil {
			lines = append(lines, fmt.Sprintf("%s: list-tools failed: %v", name, err))
		} else {
			names := make([]string, len(tools))
			for i, tl := range tools {
				names[i] = tl.Name
			}
			lines = append(lines, fmt.Sprintf("%s (%s): %d tools: %s", t.Name(), t.Kind(), len(tools), strings.Join(names, ", ")))
		}
		t.Close()
	}
	if c := o.Call; c != nil {
		lines = append(lines, callOne(c))
	}
	toolhost.Logf(toolhost.LevelInfo, "hello agent finished: %d lines", len(lines))
	return strings.Join(lines, "\n"), nil
}

func callOne(c *call) string {
	t, err := toolhost.Get(c.Tooling)
	if err != nil {
		return fmt.Sprintf("%s.%s failed: %v", c.Tooling, c.Tool, err)
	}
	defer t.Close()
	args := c.Arguments
	if args == nil {
		args = map[string]any{}
	}
	res, err := t.CallToolBlocking(c.Tool, args)
	if err != nil {
		return fmt.Sprintf("%s.%s failed: %v", c.Tooling, c.Tool, err)
	}
	v, err := res.Result()
	if err != nil {
		return fmt.Sprintf("%s.%s: bad result: %v", c.Tooling, c.Tool, err)
	}
	return fmt.Sprintf("%s.%s(%s) -> %s", c.Tooling, res.Name, res.Arguments, v.Text())
}

func init() { toolhost.Run(hello) }

func main() {}
