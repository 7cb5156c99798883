package config

// The messaging keys of [agent.<name>] (who may talk to it, how its
// instances are made) and [host] messages (how long replies are kept).

import (
	"maps"
	"slices"
	"strconv"
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
	// Expose lists the protocols it is served over besides the control
	// API: "mcp" (a tool of the MCP endpoint), "a2a" (an A2A agent); each
	// must be among its accepts.
	Expose []string `toml:"expose,omitempty" json:",omitempty"`
	// Skills are its A2A card's skills (none: one from its description).
	Skills []Skill `toml:"skills,omitempty" json:",omitempty"`
}

// Skill is one A2A skill of an agent: skills = ["text", ...] names each
// one (its id the name, its description the agent's), or an inline table
// {id, name, description, tags, examples}.
type Skill struct {
	ID          string   `toml:"id"`
	Name        string   `toml:"name"`
	Description string   `toml:"description,omitempty"`
	Tags        []string `toml:"tags,omitempty"`
	Examples    []string `toml:"examples,omitempty"`
}

// UnmarshalText reads a skill written as its name (go-toml's decoding of
// skills = ["name", ...]; the decoder above reads both forms).
func (k *Skill) UnmarshalText(b []byte) error {
	*k = Skill{ID: string(b), Name: string(b)}
	return nil
}

// Protocols an agent can be exposed over.
const (
	ExposeMCP = "mcp"
	ExposeA2A = "a2a"
)

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
		"expose": func(p []string, v any) {
			m.Expose, _ = d.asStrings(p, v, func(p []string, s string) bool {
				if s != ExposeMCP && s != ExposeA2A {
					d.errAt(p, `want "mcp" or "a2a", got %q`, s)
					return false
				}
				return true
			})
		},
		"skills": func(p []string, v any) { m.Skills = d.skills(p, v) },
	}
}

// skills decodes an agent's skills: strings or inline tables.
func (d *decoder) skills(path []string, v any) []Skill {
	arr, ok := v.([]any)
	if !ok {
		d.errAt(path, "want an array of skill names or {id, name, ...} tables, got %s", typeName(v))
		return nil
	}
	var out []Skill
	ids := map[string]bool{}
	for i, e := range arr {
		p := child(path, elem(i))
		var k Skill
		switch e := e.(type) {
		case string:
			k = Skill{ID: e, Name: e}
		case map[string]any:
			d.fields(p, e, handlers{
				"id":          func(p []string, v any) { k.ID, _ = d.asPlainString(p, v) },
				"name":        func(p []string, v any) { k.Name, _ = d.asPlainString(p, v) },
				"description": func(p []string, v any) { k.Description, _ = d.asPlainString(p, v) },
				"tags":        func(p []string, v any) { k.Tags, _ = d.asStrings(p, v, nil) },
				"examples":    func(p []string, v any) { k.Examples, _ = d.asStrings(p, v, nil) },
			})
			setDefault(&k.Name, k.ID)
		default:
			d.errAt(p, "want a skill name or an {id, name, ...} table, got %s", typeName(e))
			continue
		}
		switch {
		case k.ID == "":
			d.errAt(p, "a skill needs an id")
			continue
		case ids[k.ID]:
			d.errAt(p, "skill %q is listed twice", k.ID)
			continue
		}
		ids[k.ID] = true
		out = append(out, k)
	}
	return out
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
	for i, proto := range m.Expose {
		if (proto == ExposeMCP || proto == ExposeA2A) && !slices.Contains(m.Accepts, proto) {
			d.errAt(child(child(path, "expose"), elem(i)), "exposed over %s but %q is not in its accepts %s: add it there", proto, proto, quoteAll(m.Accepts))
		}
	}
	if len(m.Skills) > 0 && !slices.Contains(m.Expose, ExposeA2A) {
		d.errAt(child(path, "skills"), `skills are the A2A card's: only with expose = ["a2a"]`)
	}
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
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

// checkExposed refuses an agent exposed over a protocol the host serves
// no endpoint for: serve would run none and the agent would be reached by
// nobody, silently.
func (d *decoder) checkExposed(c *Config) {
	for _, name := range slices.Sorted(maps.Keys(c.Agent)) {
		for i, proto := range c.Agent[name].Expose {
			served := (proto == ExposeMCP && c.Host.MCP != nil) || (proto == ExposeA2A && c.Host.A2A != nil)
			if (proto == ExposeMCP || proto == ExposeA2A) && !served {
				d.errAt([]string{"agent", name, "expose", elem(i)},
					"exposed over %s but [host] %s is not set, so no endpoint serves it: add [host] %s = { listen = \"127.0.0.1:%s\" }",
					proto, proto, proto, map[string]string{ExposeMCP: "8787", ExposeA2A: "8788"}[proto])
			}
		}
	}
}
