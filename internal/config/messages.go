package config

// The messaging keys of [agent.<name>] (who may talk to it, how its
// instances are made) and [host] messages (how long replies are kept).

import (
	"strings"
	"time"
)

// Instance modes of an agent.
const (
	InstancesSingle     = "single"      // one instance, today's agent
	InstancesPerSession = "per-session" // an instance per message session
)

// Start modes of an agent.
const (
	StartAtServe     = "serve"      // started with serve (the default)
	StartOnMessage   = "on-message" // started by its first message, stopped when idle
	SenderAPI        = "api"
	DefaultIdle      = 5 * time.Minute
	DefaultMaxInst   = 100
	DefaultMsgBytes  = 1 << 20
	DefaultRetention = 10 * time.Minute
)

// Messaging is an agent's messaging keys.
type Messaging struct {
	// Instances is "single" (default) or "per-session".
	Instances string `toml:"instances"`
	// Start is "serve" (default) or "on-message" (single agents only).
	Start string `toml:"start"`
	// IdleTimeout stops an instance (a per-session one, or an on-message
	// single agent) that has had nothing to do for this long.
	IdleTimeout Duration `toml:"idle_timeout"`
	// MaxInstances bounds a per-session agent's live instances.
	MaxInstances int `toml:"max_instances,omitempty"`
	// Accepts are the senders it takes: "api", "mcp", "a2a",
	// "agent:NAME" globs (default ["api"]).
	Accepts []string `toml:"accepts"`
	// SendsTo are globs of the agents it may send to (default none).
	SendsTo []string `toml:"sends_to"`
	// MaxMessageBytes bounds a message's content.
	MaxMessageBytes ByteSize `toml:"max_message_bytes"`
	// AuditArguments writes messages' text into the audit log.
	AuditArguments bool `toml:"audit_arguments"`
	// Description says what the agent does (its MCP tool's description,
	// its A2A card).
	Description string `toml:"description"`
}

// messagingHandlers decode an agent's messaging keys into m.
func (d *decoder) messagingHandlers(m *Messaging) handlers {
	return handlers{
		"instances": func(p []string, v any) {
			m.Instances, _ = d.asEnum(p, v, InstancesSingle, InstancesPerSession)
		},
		"start":        func(p []string, v any) { m.Start, _ = d.asEnum(p, v, StartAtServe, StartOnMessage) },
		"idle_timeout": func(p []string, v any) { m.IdleTimeout, _ = d.asDuration(p, v, true) },
		"max_instances": func(p []string, v any) {
			m.MaxInstances, _ = d.asInt(p, v, 1)
		},
		"accepts": func(p []string, v any) {
			m.Accepts, _ = d.asStrings(p, v, func(p []string, s string) bool {
				if msg := checkSender(s); msg != "" {
					d.errAt(p, "%s", msg)
					return false
				}
				return true
			})
		},
		"sends_to": func(p []string, v any) {
			m.SendsTo, _ = d.asStrings(p, v, func(p []string, s string) bool {
				if msg := checkPattern(s); msg != "" {
					d.errAt(p, "%s", msg)
					return false
				}
				return true
			})
		},
		"max_message_bytes": func(p []string, v any) { m.MaxMessageBytes, _ = d.asByteSize(p, v) },
		"audit_arguments":   func(p []string, v any) { m.AuditArguments, _ = d.asBool(p, v) },
		"description":       func(p []string, v any) { m.Description, _ = d.asPlainString(p, v) },
	}
}

// checkMessaging checks the keys against each other and sets defaults.
func (d *decoder) checkMessaging(path []string, keys map[string]any, m *Messaging) {
	setDefault(&m.Instances, InstancesSingle)
	setDefault(&m.Start, StartAtServe)
	if m.Start == StartOnMessage && m.Instances == InstancesPerSession {
		d.errAt(child(path, "start"), `"on-message" is for single agents: a per-session agent's instances always start on their first message`)
	}
	if _, ok := keys["max_instances"]; ok && m.Instances != InstancesPerSession {
		d.errAt(child(path, "max_instances"), `only for instances = "per-session"`)
	}
	setDefaultDuration(&m.IdleTimeout, DefaultIdle)
	if m.MaxInstances == 0 && m.Instances == InstancesPerSession {
		m.MaxInstances = DefaultMaxInst
	}
	if _, ok := keys["accepts"]; !ok {
		m.Accepts = []string{SenderAPI}
	}
	if m.MaxMessageBytes == 0 {
		m.MaxMessageBytes = DefaultMsgBytes
	}
}

// checkSender validates an accepts entry.
func checkSender(s string) string {
	switch {
	case s == "api", s == "mcp", s == "a2a":
		return ""
	case strings.HasPrefix(s, "agent:") && len(s) > len("agent:"):
		return checkPattern(strings.TrimPrefix(s, "agent:"))
	}
	return `want "api", "mcp", "a2a" or "agent:NAME" (NAME may be a glob), got "` + s + `"`
}
