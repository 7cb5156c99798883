package config

// The [host] traces table: OpenTelemetry traces (internal/tracing).

import "strings"

// Traces is [host] traces. Its presence turns tracing on (spans kept in
// memory for GET /v1/traces, exported when an endpoint is known); the
// standard OTEL_* environment turns it on too and fills in what is left
// out. Headers keep their ${env:...} / ${file:...} references: call Expand
// at use.
type Traces struct {
	// Endpoint is the OTLP/HTTP traces URL, e.g.
	// "http://localhost:4318/v1/traces"; "": the environment's, or none.
	Endpoint string `toml:"endpoint,omitempty"`
	// Headers go with every export (an API key, say).
	Headers map[string]string `toml:"headers,omitempty"`
	// SamplerRatio samples root traces at that ratio, 0 to 1 (children
	// follow their parent); nil: OTEL_TRACES_SAMPLER, else every trace.
	SamplerRatio *float64 `toml:"sampler_ratio,omitempty"`
	// CaptureContent records prompts, completions, tool arguments and
	// results and message text on the spans (default false).
	CaptureContent bool `toml:"capture_content,omitempty"`
	// Keep bounds the traces kept in memory (default 256).
	Keep int `toml:"keep,omitempty"`
}

// traces decodes [host] traces.
func (d *decoder) traces(p []string, v any) *Traces {
	m, ok := d.asTable(p, v)
	if !ok {
		return nil
	}
	t := &Traces{}
	d.fields(p, m, handlers{
		"endpoint": func(p []string, v any) {
			s, ok := d.asPlainString(p, v)
			if ok && s != "" && !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
				d.errAt(p, "%q: want an http:// or https:// URL, e.g. \"http://localhost:4318/v1/traces\"", s)
				return
			}
			t.Endpoint = s
		},
		"headers": func(p []string, v any) {
			t.Headers, _ = d.asStringMap(p, v, func(string) string { return "" })
		},
		"sampler_ratio": func(p []string, v any) {
			x, ok := d.asNumber(p, v, "a number from 0 to 1")
			if !ok {
				return
			}
			if !(x >= 0 && x <= 1) {
				d.errAt(p, "must be from 0 to 1, got %v", v)
				return
			}
			t.SamplerRatio = &x
		},
		"capture_content": func(p []string, v any) { t.CaptureContent, _ = d.asBool(p, v) },
		"keep":            func(p []string, v any) { t.Keep, _ = d.asInt(p, v, 1) },
	})
	return t
}
