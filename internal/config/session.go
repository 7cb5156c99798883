package config

import "time"

// Defaults of the session keys of a tooling (see toolingSession).
const (
	// DefaultMaxMessageBytes bounds one JSON-RPC message from a server.
	DefaultMaxMessageBytes ByteSize = 64 << 20
	// DefaultPingInterval and DefaultPingTimeout are the liveness check: a
	// hung server is replaced at most interval+timeout after its last
	// answer.
	DefaultPingInterval = time.Second
	DefaultPingTimeout  = 3 * time.Second
)

// toolingSession adds the handlers of a tooling's session keys
// (max_message_bytes, ping_interval, ping_timeout) to h, and returns the
// function that fills their defaults once h has run.
func (d *decoder) toolingSession(t *Tooling, h handlers) (defaults func()) {
	h["max_message_bytes"] = func(p []string, v any) {
		b, ok := d.asByteSize(p, v)
		if ok && b < 1024 {
			d.errAt(p, "must be at least 1KiB, got %d", uint64(b))
			return
		}
		t.MaxMessageBytes = b
	}
	h["ping_interval"] = func(p []string, v any) {
		t.PingInterval, _ = d.asDuration(p, v, true)
	}
	h["ping_timeout"] = func(p []string, v any) {
		t.PingTimeout, _ = d.asDuration(p, v, true)
	}
	return func() {
		if t.MaxMessageBytes == 0 {
			t.MaxMessageBytes = DefaultMaxMessageBytes
		}
		setDefaultDuration(&t.PingInterval, DefaultPingInterval)
		setDefaultDuration(&t.PingTimeout, DefaultPingTimeout)
	}
}

// asByteSize decodes a size: an integer (bytes) or a string with a unit.
func (d *decoder) asByteSize(path []string, v any) (ByteSize, bool) {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			d.errAt(path, "must not be negative")
			return 0, false
		}
		return ByteSize(x), true
	case string:
		b, err := ParseByteSize(x)
		if err != nil {
			d.errAt(path, "%v", err)
			return 0, false
		}
		return b, true
	}
	d.errAt(path, "want a size such as \"64MiB\" or an integer, got %s", typeName(v))
	return 0, false
}
