package config

// The [agent.<name>] tables and their limits.

import (
	"maps"
	"math"
)

func (d *decoder) agent(path []string, name string, v any) *Agent {
	m, ok := d.asTable(path, v)
	if !ok {
		return nil
	}
	if !validName(name) {
		d.errAt(path, "invalid agent name: use 1 to 64 letters, digits, '-' and '_'")
	}
	a := &Agent{Name: name}
	_, graceSet := m["stop_grace"]
	var backoffSet, logRateSet bool
	h := d.messagingHandlers(&a.Messaging)
	maps.Copy(h, d.agentStoreHandlers(&a.AgentStore))
	maps.Copy(h, d.agentDurableHandlers(&a.AgentDurable))
	maps.Copy(h, handlers{
		"component": func(p []string, v any) {
			s, ok := d.asPlainString(p, v)
			if ok && s == "" {
				d.errAt(p, "must not be empty")
			}
			a.Component = d.resolvePath(s)
			d.componentAt[name] = d.ix.lookup(p)
		},
		"toolings": func(p []string, v any) { a.Toolings = d.asNames(p, v, d.toolings, "tooling", d.knownToolings) },
		"input": func(p []string, v any) {
			a.Input, _ = d.asString(p, v)
		},
		"env": func(p []string, v any) {
			a.Env, _ = d.asStringMap(p, v, envKey)
		},
		"restart": func(p []string, v any) {
			a.Restart, _ = d.asEnum(p, v, "never", "on-failure", "always")
		},
		"restart_backoff": func(p []string, v any) {
			bm, ok := d.asTable(p, v)
			if !ok {
				return
			}
			backoffSet = true
			d.fields(p, bm, handlers{
				"initial": func(p []string, v any) { a.RestartBackoff.Initial, _ = d.asDuration(p, v, true) },
				"max":     func(p []string, v any) { a.RestartBackoff.Max, _ = d.asDuration(p, v, true) },
			})
		},
		"inbox_capacity": func(p []string, v any) {
			a.InboxCapacity, _ = d.asInt(p, v, 1)
		},
		"limits": func(p []string, v any) {
			lm, ok := d.asTable(p, v)
			if !ok {
				return
			}
			d.fields(p, lm, handlers{
				"memory": func(p []string, v any) {
					switch x := v.(type) {
					case int64:
						if x < 0 {
							d.errAt(p, "must not be negative")
							return
						}
						a.Limits.Memory = ByteSize(x)
					case string:
						b, err := ParseByteSize(x)
						if err != nil {
							d.errAt(p, "%v", err)
							return
						}
						a.Limits.Memory = b
					default:
						d.errAt(p, "want a size such as \"256MiB\" or an integer, got %s", typeName(v))
					}
				},
				"fuel": func(p []string, v any) {
					x, ok := v.(int64)
					switch {
					case !ok:
						d.errAt(p, "want an integer, got %s", typeName(v))
					case x < 0:
						d.errAt(p, "must not be negative")
					default:
						a.Limits.Fuel = uint64(x)
					}
				},
				"run_timeout": func(p []string, v any) { a.Limits.RunTimeout, _ = d.asDuration(p, v, false) },
				"log_rate":    func(p []string, v any) { logRateSet = d.logRate(p, v, &a.Limits.LogRate) },
				"log_burst":   func(p []string, v any) { a.Limits.LogBurst, _ = d.asInt(p, v, 1) },
			})
		},
		"stop_grace": func(p []string, v any) {
			a.StopGrace, _ = d.asDuration(p, v, false)
		},
		"grants":    func(p []string, v any) { a.Grants, a.ProviderGrants = d.grants(p, v) },
		"providers": func(p []string, v any) { a.Providers = d.asNames(p, v, d.providers, "provider", d.knownProviders) },
	})
	d.fields(path, m, h)
	d.checkGrants(path, a)
	d.checkMessaging(path, m, &a.Messaging)
	d.checkDurable(&a.AgentDurable)
	if _, ok := m["component"]; !ok {
		d.errAt(child(path, "component"), "missing (the agent's WebAssembly component)")
	}
	setDefault(&a.Restart, DefaultAgentRestart)
	initialSet, maxSet := a.RestartBackoff.Initial.Duration != 0, a.RestartBackoff.Max.Duration != 0
	setDefaultDuration(&a.RestartBackoff.Initial, DefaultAgentBackoffInit)
	setDefaultDuration(&a.RestartBackoff.Max, DefaultAgentBackoffMax)
	if backoffSet && (initialSet || maxSet) && a.RestartBackoff.Max.Duration < a.RestartBackoff.Initial.Duration {
		d.errAt(child(child(path, "restart_backoff"), "max"), "max (%s) is less than initial (%s)",
			a.RestartBackoff.Max.Duration, a.RestartBackoff.Initial.Duration)
	}
	if a.InboxCapacity == 0 {
		a.InboxCapacity = DefaultInboxCapacity
	}
	if !graceSet {
		a.StopGrace = Duration{DefaultStopGrace}
	}
	if !logRateSet {
		a.Limits.LogRate = DefaultLogRate
	}
	if a.Limits.LogBurst == 0 {
		a.Limits.LogBurst = DefaultLogBurst
	}
	return a
}

// logRate decodes limits.log_rate (lines per second, an integer or a
// float, 0 for unlimited) and reports whether it was valid.
func (d *decoder) logRate(p []string, v any, out *float64) bool {
	x, ok := d.asNumber(p, v, "a number of lines per second (0: unlimited)")
	if !ok {
		return false
	}
	if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		d.errAt(p, "must be a non-negative number (0: unlimited)")
		return false
	}
	*out = x
	return true
}
