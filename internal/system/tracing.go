package system

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/tracing"
)

// openTracing sets up the traces [host] traces and the OTEL_* environment
// ask for (tracing.Off when neither does).
func (s *System) openTracing() error {
	tc := s.Config.Host.Traces
	o := tracing.Options{Version: s.opts.Version, Member: s.opts.Cluster.Member, Log: s.log}
	if tc != nil {
		o.Enabled, o.Endpoint, o.Ratio, o.CaptureContent, o.Keep = true, tc.Endpoint, tc.SamplerRatio, tc.CaptureContent, tc.Keep
		if len(tc.Headers) > 0 {
			o.Headers = make(map[string]string, len(tc.Headers))
			for k, v := range tc.Headers {
				x, err := config.Expand(v)
				if err != nil {
					return fmt.Errorf("host.traces.headers.%s: %w", k, err)
				}
				o.Headers[k] = x
			}
		}
	}
	t, err := tracing.New(o)
	if err != nil {
		return err
	}
	s.Tracing = t
	if m := s.opts.Metrics; m != nil && t.On() {
		m.Traces(t)
	}
	if t.On() {
		s.log.Info("traces on", zap.Bool("exporting", t.Exporting()), zap.Bool("capture_content", t.CaptureContent()))
	}
	return nil
}

// closeTracing exports what is queued and stops the exporter.
func (s *System) closeTracing() {
	if s.Tracing != nil {
		_ = s.Tracing.Close(context.Background())
	}
}
