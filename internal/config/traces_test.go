package config

import (
	"strings"
	"testing"
)

func TestTraces(t *testing.T) {
	for _, tc := range []struct {
		name, toml, err string
		check           func(*testing.T, *Traces)
	}{
		{name: "absent", toml: "", check: func(t *testing.T, tr *Traces) {
			if tr != nil {
				t.Errorf("traces %+v, want nil", tr)
			}
		}},
		{name: "empty table turns it on", toml: "traces = {}", check: func(t *testing.T, tr *Traces) {
			if tr == nil || tr.Endpoint != "" || tr.SamplerRatio != nil || tr.CaptureContent {
				t.Errorf("traces %+v", tr)
			}
		}},
		{name: "every key", toml: `traces = { endpoint = "http://c:4318/v1/traces", headers = { k = "${env:X}" }, sampler_ratio = 0.25, capture_content = true, keep = 10 }`,
			check: func(t *testing.T, tr *Traces) {
				if tr.Endpoint != "http://c:4318/v1/traces" || tr.Headers["k"] != "${env:X}" || tr.SamplerRatio == nil || *tr.SamplerRatio != 0.25 || !tr.CaptureContent || tr.Keep != 10 {
					t.Errorf("traces %+v", tr)
				}
			}},
		{name: "ratio 1 as an integer", toml: "traces = { sampler_ratio = 1 }", check: func(t *testing.T, tr *Traces) {
			if tr.SamplerRatio == nil || *tr.SamplerRatio != 1 {
				t.Errorf("ratio %v", tr.SamplerRatio)
			}
		}},
		{name: "ratio above 1", toml: "traces = { sampler_ratio = 1.5 }", err: "t.toml:3:12: host.traces.sampler_ratio: must be from 0 to 1"},
		{name: "not a URL", toml: `traces = { endpoint = "localhost:4318" }`, err: "host.traces.endpoint: \"localhost:4318\": want an http:// or https:// URL"},
		{name: "unknown key", toml: "traces = { capture = true }", err: "host.traces.capture"},
		{name: "keep zero", toml: "traces = { keep = 0 }", err: "host.traces.keep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("t.toml", []byte("version = 1\n[host]\n"+tc.toml+"\n"))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c.Host.Traces)
		})
	}
}
