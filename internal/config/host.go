package config

// The [host] table.

import (
	"fmt"
	"net"
	"strconv"
)

func (d *decoder) host(path []string, m map[string]any, h *Host) {
	d.fields(path, m, handlers{
		"log_level": func(p []string, v any) {
			h.LogLevel, _ = d.asEnum(p, v, "debug", "info", "warn", "error")
		},
		"log_format": func(p []string, v any) {
			h.LogFormat, _ = d.asEnum(p, v, "console", "json")
		},
		"cache_dir": func(p []string, v any) {
			s, _ := d.asPlainString(p, v)
			h.CacheDir = d.resolvePath(s)
		},
		"control_socket": func(p []string, v any) {
			s, _ := d.asPlainString(p, v)
			h.ControlSocket = d.resolvePath(s)
		},
		"control_listen": func(p []string, v any) {
			s, ok := d.asPlainString(p, v)
			if !ok || s == "" {
				return
			}
			if msg := checkListen(s); msg != "" {
				d.errAt(p, "%s", msg)
				return
			}
			h.ControlListen = s
		},
		"control_token": func(p []string, v any) {
			h.ControlToken, _ = d.asRefString(p, v)
		},
		"audit_log": func(p []string, v any) { h.AuditLog = d.auditLog(p, v) },
		"state_dir": func(p []string, v any) {
			s, _ := d.asPlainString(p, v)
			h.StateDir = d.resolvePath(s)
		},
		"message_retention": func(p []string, v any) { h.MessageRetention, _ = d.asDuration(p, v, true) },
		"mcp":               func(p []string, v any) { h.MCP = d.endpoint(p, v, "mcp") },
		"a2a":               func(p []string, v any) { h.A2A = d.endpoint(p, v, "a2a") },
		"store":             func(p []string, v any) { d.hostStore(p, v, &h.Store) },
		"traces":            func(p []string, v any) { h.Traces = d.traces(p, v) },
		"max_threads": func(p []string, v any) {
			n, ok := d.asInt(p, v, MinMaxThreads)
			if ok && n > MaxMaxThreads {
				d.errAt(p, "must be at most %d, got %d", MaxMaxThreads, n)
				return
			}
			h.MaxThreads = n
		},
	})
	// An empty string is the same as the key left out (no TCP, no token).
	if h.ControlListen != "" && h.ControlToken == "" && !d.erred(child(path, "control_token"), 0) {
		d.errAt(child(path, "control_listen"), "needs control_token: the control API is never served on TCP without a bearer token")
	}
}

// checkListen validates a TCP listen address: host:port with a port from 1
// to 65535. It returns a message, "" when addr is good.
func checkListen(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("invalid address %q: want host:port, e.g. \"127.0.0.1:7070\"", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Sprintf("invalid port %q: want a number from 1 to 65535", port)
	}
	return ""
}
