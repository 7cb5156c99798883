// watch: subscribes to one resource and logs each update until it has
// `count` of them or the host shuts it down (the Go port of
// examples/agents/watch.js). Input: a URI, or JSON {"tooling", "uri",
// "count", "toggle"}; "toggle" calls server-everything's
// toggle-subscriber-updates tool first so that it starts sending updates.
package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolhostd/toolhostd/sdk/go/toolhost"
)

type options struct {
	Tooling string `json:"tooling"`
	URI     string `json:"uri"`
	Count   int    `json:"count"`
	Toggle  bool   `json:"toggle"`
}

func parse(input string) (options, error) {
	o := options{Tooling: "everything", URI: "demo://resource/static/document/features.md", Count: 3, Toggle: true}
	s := strings.TrimSpace(input)
	switch {
	case s == "":
	case strings.HasPrefix(s, "{"):
		if err := json.Unmarshal([]byte(s), &o); err != nil {
			return o, err
		}
	default:
		o.URI = s
	}
	return o, nil
}

func watch(input string) (string, error) {
	o, err := parse(input)
	if err != nil {
		return "", err
	}
	t, err := toolhost.Get(o.Tooling)
	if err != nil {
		return "", err
	}
	defer t.Close()
	sub, err := t.SubscribeResource(o.URI)
	if err != nil {
		return "", err
	}
	if o.Toggle {
		if _, err := t.CallToolBlocking("toggle-subscriber-updates", "{}"); err != nil {
			return "", err
		}
	}
	updates := 0
loop:
	for {
		env, ok := toolhost.Recv(toolhost.Forever)
		if !ok {
			break
		}
		switch ev := env.Event.(type) {
		case toolhost.ShutdownEvent:
			break loop
		case toolhost.ErrorEvent:
			if env.ID == sub {
				return "", fmt.Errorf("subscription failed: %v", ev.Err)
			}
		case toolhost.ResourceUpdatedEvent:
			if env.ID != sub {
				continue
			}
			updates++
			c := ev.Content
			mime := "no mime type"
			if c.MIMEType != nil {
				mime = *c.MIMEType
			}
			toolhost.Logf(toolhost.LevelInfo, "update %d: %s (%s, %d chars)", updates, c.URI, mime, len([]rune(c.Content)))
			if updates >= o.Count {
				break loop
			}
		}
	}
	t.UnsubscribeResource(sub)
	return fmt.Sprintf("%d updates of %s", updates, o.URI), nil
}

func init() { toolhost.Run(watch) }

func main() {}
