// Package tracing owns the host's OpenTelemetry traces: the SDK's tracer
// provider (batching, bounded queue, OTLP/HTTP protobuf export) set up from
// the standard OTEL_* environment or the config's [host] traces, the W3C
// Trace Context propagator every boundary uses, the in-memory store of the
// last traces (Recent) that the control API serves, and a count of the
// spans that could not be exported.
//
// Off (no endpoint in the environment and no [host] traces), Provider is
// OpenTelemetry's no-op provider: a span started on a hot path costs a
// call and records nothing. The span names and attributes follow the
// OpenTelemetry GenAI and MCP semantic conventions; the packages that
// start spans (message, contract, mcpclient) take a trace.TracerProvider
// and know nothing of this one.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"
)

// Name is the instrumentation scope of the host's spans.
const Name = "github.com/toolhostd/toolhostd"

// CaptureContentEnv is the OpenTelemetry GenAI instrumentations' switch
// for recording content: "true" does what capture_content does.
const CaptureContentEnv = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// Propagator reads and writes traceparent, tracestate and baggage: on the
// control API, the MCP and A2A endpoints, forwarded messages and outgoing
// MCP and model requests.
var Propagator propagation.TextMapPropagator = propagation.NewCompositeTextMapPropagator(
	propagation.TraceContext{}, propagation.Baggage{})

// Options set up tracing; the zero value is on only when the environment
// names an OTLP endpoint.
type Options struct {
	// Enabled turns tracing on without an endpoint in the environment
	// (the config has [host] traces): spans go to Recent, and to Endpoint
	// or the environment's endpoint when there is one.
	Enabled bool
	// Endpoint is the OTLP/HTTP traces URL (http://host:4318/v1/traces);
	// "": the environment's (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
	// OTEL_EXPORTER_OTLP_ENDPOINT), if any.
	Endpoint string
	// Headers go with every export (on top of OTEL_EXPORTER_OTLP_HEADERS).
	Headers map[string]string
	// Ratio, when set, samples root traces at that ratio (children follow
	// their parent); nil: OTEL_TRACES_SAMPLER/_ARG, else always.
	Ratio *float64
	// CaptureContent records prompts, completions, tool arguments and
	// results and message text on the spans (so does CaptureContentEnv).
	CaptureContent bool
	// Keep bounds Recent: traces and bytes (0: the defaults).
	Keep, KeepBytes int
	// Version is service.version; Member is the cluster member id
	// (toolhost.cluster.member), "" outside a cluster.
	Version, Member string
	// Log says once that traces cannot be exported; nil: nothing.
	Log *zap.Logger
	// Getenv reads the environment (os.Getenv).
	Getenv func(string) string
}

// Tracing is the host's tracer provider and its in-memory store.
type Tracing struct {
	tp        trace.TracerProvider
	exporting bool
	sdk       *sdktrace.TracerProvider // nil when off
	recent    *Recent
	capture   bool
	ended     atomic.Uint64 // sampled spans ended
	exported  atomic.Uint64
	dropped   atomic.Uint64
}

// Off is tracing turned off: the no-op provider.
func Off() *Tracing { return &Tracing{tp: noop.NewTracerProvider()} }

// New sets tracing up from o and the environment; Off when neither asks
// for it.
func New(o Options) (*Tracing, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return Off(), nil
	}
	envEndpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
	if !o.Enabled && !envEndpoint {
		return Off(), nil
	}
	log := o.Log
	if log == nil {
		log = zap.NewNop()
	}
	log = log.Named("tracing")
	// The SDK's own errors (a failed export, each retry) go to the debug
	// log; the exporter below says once at warn that it cannot export.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Debug("opentelemetry", zap.Error(err)) }))
	// The GenAI instrumentations' own switch turns content capture on too.
	capture := o.CaptureContent || strings.EqualFold(getenv(CaptureContentEnv), "true")
	t := &Tracing{recent: NewRecent(o.Keep, o.KeepBytes), capture: capture}

	attrs := []attribute.KeyValue{attribute.String("service.name", "toolhostd")}
	if o.Version != "" {
		attrs = append(attrs, attribute.String("service.version", o.Version))
	}
	if o.Member != "" {
		attrs = append(attrs, attribute.String("toolhost.cluster.member", o.Member))
	}
	// The environment (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) comes
	// last and wins over the defaults.
	res, err := resource.New(context.Background(),
		resource.WithAttributes(attrs...), resource.WithHost(), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing resource: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(res),
		sdktrace.WithSpanProcessor(t.recent),
		sdktrace.WithSpanProcessor(counter{t}),
	}
	if o.Ratio != nil {
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(*o.Ratio))))
	}
	if o.Endpoint != "" || envEndpoint {
		var xo []otlptracehttp.Option
		if o.Endpoint != "" {
			xo = append(xo, otlptracehttp.WithEndpointURL(o.Endpoint))
		}
		if len(o.Headers) > 0 {
			xo = append(xo, otlptracehttp.WithHeaders(o.Headers))
		}
		exp, err := otlptracehttp.New(context.Background(), xo...)
		if err != nil {
			return nil, fmt.Errorf("tracing exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(&exporter{SpanExporter: exp, t: t, log: log}))
		t.exporting = true
	}
	t.sdk = sdktrace.NewTracerProvider(opts...)
	t.tp = t.sdk
	return t, nil
}

// Provider is the tracer provider to start spans with (no-op when off).
func (t *Tracing) Provider() trace.TracerProvider { return t.tp }

// On reports whether spans are recorded.
func (t *Tracing) On() bool { return t.sdk != nil }

// Exporting reports whether spans are sent to a collector.
func (t *Tracing) Exporting() bool { return t.exporting }

// Recent is the store of the last traces; nil when off.
func (t *Tracing) Recent() *Recent { return t.recent }

// CaptureContent reports whether spans carry content.
func (t *Tracing) CaptureContent() bool { return t.capture }

// Dropped counts the spans an export failed for (an unreachable or
// refusing collector).
func (t *Tracing) Dropped() uint64 { return t.dropped.Load() }

// Exported counts the spans the collector took.
func (t *Tracing) Exported() uint64 { return t.exported.Load() }

// Ended counts the sampled spans ended; when exporting, those neither
// exported nor dropped are queued or were shed by a full queue.
func (t *Tracing) Ended() uint64 { return t.ended.Load() }

// Flush exports what is queued now (bounded by ctx).
func (t *Tracing) Flush(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	return t.sdk.ForceFlush(ctx)
}

// Close exports what is queued (bounded by ctx) and stops the exporter;
// idempotent.
func (t *Tracing) Close(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return t.sdk.Shutdown(ctx)
}

// exporter counts what the OTLP exporter could not send and says so once
// (and once more after it could again): an unreachable collector costs
// the agents nothing, the batcher drops what it cannot send.
type exporter struct {
	sdktrace.SpanExporter
	t      *Tracing
	log    *zap.Logger
	failed atomic.Bool
}

func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		e.t.dropped.Add(uint64(len(spans)))
		if !e.failed.Swap(true) {
			e.log.Warn("cannot export traces; dropping them until the collector answers", zap.Error(err))
		}
		return err
	}
	e.t.exported.Add(uint64(len(spans)))
	if e.failed.Swap(false) {
		e.log.Info("exporting traces again")
	}
	return nil
}

// counter counts the sampled spans ended.
type counter struct{ t *Tracing }

func (c counter) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (c counter) Shutdown(context.Context) error                  { return nil }
func (c counter) ForceFlush(context.Context) error                { return nil }
func (c counter) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.SpanContext().IsSampled() {
		c.t.ended.Add(1)
	}
}
