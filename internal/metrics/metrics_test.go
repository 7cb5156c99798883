package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/control/controltest"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/metrics"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var objectSchema = json.RawMessage(`{"type":"object"}`)

// newServer is the suite's MCP server: besides testenv.MCPServer's echo and
// fail, "says-iserror" (a success whose text says isError), "invalid" (a
// JSON-RPC invalid-params error) and "block" (blocks until cancelled); the
// resources test://a and test://refused ("hello") and test://broken (its
// read fails).
func newServer() *testenv.MCPServer {
	s := testenv.NewMCPServer(testenv.MCPServerOptions{Name: "metrics-test", Subscribable: true, SlowTool: "block"})
	text := func(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }
	s.Server.AddTool(&mcp.Tool{Name: "says-iserror", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text(`"isError": true`)}, nil // not an error
		})
	s.Server.AddTool(&mcp.Tool{Name: "invalid", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad argument x"}
		})
	for _, uri := range []string{"test://a", "test://refused"} {
		s.AddResource(uri, "hello")
	}
	s.Server.AddResource(&mcp.Resource{URI: "test://broken", Name: "broken"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return nil, errors.New("disk on fire")
		})
	return s
}

func dur(d time.Duration) config.Duration { return config.Duration{Duration: d} }

// connect serves an MCP tooling named name on s until the test ends and
// waits for its session.
func connect(t testing.TB, s *testenv.MCPServer, name string) *mcpclient.Client {
	t.Helper()
	m := newClient(t, s, name)
	testenv.ServeTooling(t, m, nil)
	waitConnected(t, m)
	return m
}

func waitConnected(t testing.TB, m *mcpclient.Client) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "a session", func() bool { return m.Status().Connected })
}

// newClient is an MCP tooling named name on s, not served yet.
func newClient(t testing.TB, s *testenv.MCPServer, name string) *mcpclient.Client {
	t.Helper()
	cfg := &config.Tooling{
		Name:           name,
		Kind:           "mcp",
		Transport:      "stdio",
		Restart:        config.Restart{InitialBackoff: dur(20 * time.Millisecond), MaxBackoff: dur(200 * time.Millisecond), HealthyAfter: dur(time.Second)},
		ToolingProcess: config.ToolingProcess{Command: "unused-with-a-dialer"},
		ToolingCalls:   config.ToolingCalls{ConnectTimeout: dur(5 * time.Second), CallTimeout: dur(20 * time.Second)},
	}
	m, err := mcpclient.New(cfg, zap.NewNop(), mcpclient.Options{Dialer: s.Dialer()})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// families gathers m's registry by name.
func families(t *testing.T, m *metrics.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// find returns the metric of family name whose labels include labels
// ("k=v" pairs), nil if none.
func find(fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for _, l := range labels {
			k, v, _ := strings.Cut(l, "=")
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

// value is a counter's or gauge's value (-1 when the series is absent).
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	m := find(fams, name, labels...)
	switch {
	case m == nil:
		return -1
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return -1
}

func TestInstrumentCalls(t *testing.T) {
	s := newServer()
	inner := connect(t, s, "mem")
	m := metrics.New(metrics.Options{})
	tl := m.Instrument(inner)
	if tl.Name() != "mem" || tl.Kind() != "mcp" {
		t.Errorf("Name %q Kind %q", tl.Name(), tl.Kind())
	}
	if u, ok := tl.(metrics.Unwrapper); !ok || u.Unwrap() != tooling.Tooling(inner) {
		t.Error("Unwrap does not return the wrapped tooling")
	}
	ctx := t.Context()
	call := func(tool string, ctx context.Context) error {
		res, err := tl.CallTool(ctx, tool, json.RawMessage(`{}`))
		if err == nil && res.Name != tool {
			t.Errorf("result of %s names %q", tool, res.Name)
		}
		return err
	}
	for range 3 {
		if err := call("echo", ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := call("fail", ctx); err != nil {
			t.Fatalf("an isError result is not an error: %v", err)
		}
	}
	if err := call("says-iserror", ctx); err != nil {
		t.Fatal(err)
	}
	errInvalid := call("invalid", ctx)
	errUnknown := call("no-such-tool", ctx)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	errBlock := call("block", short)
	cancel()
	for _, tt := range []struct {
		err  error
		want tooling.ErrorCode
	}{{errInvalid, tooling.CodeInvalidArgument}, {errUnknown, tooling.CodeNotFound}} {
		if tt.err == nil || tooling.CodeOf(tt.err) != tt.want {
			t.Errorf("err %v, want code %v", tt.err, tt.want)
		}
	}
	if errBlock == nil {
		t.Fatal("a blocked call with a 50ms deadline succeeded")
	}
	blockCode := tooling.CodeOf(errBlock).String()

	if _, err := tl.ReadResource(ctx, "test://a"); err != nil {
		t.Fatal(err)
	}
	if _, err := tl.ReadResource(ctx, "test://a"); err != nil {
		t.Fatal(err)
	}
	_, errRead := tl.ReadResource(ctx, "test://broken")
	if errRead == nil {
		t.Fatal("reading test://broken succeeded")
	}
	// Calls through the inner tooling are not counted.
	if _, err := inner.CallTool(ctx, "echo", nil); err != nil {
		t.Fatal(err)
	}

	f := families(t, m)
	const calls = "toolhostd_tooling_calls_total"
	for _, tt := range []struct {
		tool, outcome string
		want          float64
	}{
		{"echo", "ok", 3},
		{"fail", "tool_error", 2},
		{"says-iserror", "ok", 1},
		{"invalid", "invalid-argument", 1},
		{"no-such-tool", "not-found", 1},
		{"block", blockCode, 1},
		{"echo", "tool_error", -1},
	} {
		if got := value(f, calls, "tooling=mem", "tool="+tt.tool, "outcome="+tt.outcome); got != tt.want {
			t.Errorf("%s{tool=%s,outcome=%s} = %v, want %v", calls, tt.tool, tt.outcome, got, tt.want)
		}
	}
	if n := len(f[calls].GetMetric()); n != 6 {
		t.Errorf("%s has %d series, want 6", calls, n)
	}
	h := find(f, "toolhostd_tooling_call_duration_seconds", "tooling=mem", "tool=echo")
	if h == nil || h.Histogram.GetSampleCount() != 3 || h.Histogram.GetSampleSum() <= 0 {
		t.Errorf("echo latency histogram %v", h)
	}
	// A failed call is timed too.
	if h := find(f, "toolhostd_tooling_call_duration_seconds", "tooling=mem", "tool=block"); h == nil || h.Histogram.GetSampleCount() != 1 || h.Histogram.GetSampleSum() <= 0 {
		t.Errorf("block latency histogram %v", h)
	}
	const reads = "toolhostd_pump_reads_total"
	if got := value(f, reads, "tooling=mem", "outcome=ok"); got != 2 {
		t.Errorf("%s{ok} = %v", reads, got)
	}
	if got := value(f, reads, "tooling=mem", "outcome="+tooling.CodeOf(errRead).String()); got != 1 {
		t.Errorf("%s{%v} = %v", reads, tooling.CodeOf(errRead), got)
	}
}

// recorder is an Observer that counts what reaches it.
type recorder struct {
	updated, listChanged, resubFailed atomic.Int64
}

func (r *recorder) ResourceUpdated(string)          { r.updated.Add(1) }
func (r *recorder) ResourceListChanged()            { r.listChanged.Add(1) }
func (r *recorder) ResubscribeFailed(string, error) { r.resubFailed.Add(1) }

func TestInstrumentObserver(t *testing.T) {
	s := newServer()
	m := metrics.New(metrics.Options{})
	inner := newClient(t, s, "obs")
	tl := m.Instrument(inner)
	rec := &recorder{}
	serveCtx, stopServe := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); _ = tl.Serve(serveCtx, rec) }()
	t.Cleanup(func() { stopServe(); <-served })
	waitConnected(t, inner)
	ctx := t.Context()
	for _, uri := range []string{"test://a", "test://refused"} {
		if err := tl.Subscribe(ctx, uri); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if err := s.Server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://a"}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 30*time.Second, "3 updates", func() bool { return rec.updated.Load() == 3 })
	s.Server.AddResource(&mcp.Resource{URI: "test://new", Name: "new"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://new", Text: "n"}}}, nil
		})
	testenv.Eventually(t, 30*time.Second, "a list change", func() bool { return rec.listChanged.Load() >= 1 })
	s.RefuseSubscribe("test://refused", true)
	s.DropSessions() // the tooling reconnects; re-subscribing test://refused fails
	testenv.Eventually(t, 30*time.Second, "a failed re-subscription", func() bool { return rec.resubFailed.Load() == 1 })

	f := families(t, m)
	if got := value(f, "toolhostd_pump_updates_received_total", "tooling=obs"); got != 3 {
		t.Errorf("updates received = %v, want 3", got)
	}
	if got, want := value(f, "toolhostd_pump_list_changes_received_total", "tooling=obs"), float64(rec.listChanged.Load()); got != want {
		t.Errorf("list changes = %v, the observer saw %v", got, want)
	}
	if got := value(f, "toolhostd_tooling_resubscribe_failures_total", "tooling=obs"); got != 1 {
		t.Errorf("resubscribe failures = %v, want 1", got)
	}
	// Served without an observer, nothing is counted either.
	stopServe()
	<-served
	testenv.ServeTooling(t, tl, nil)
	testenv.Eventually(t, 30*time.Second, "a session again", func() bool { return tl.(metrics.Unwrapper).Unwrap().(*mcpclient.Client).Status().Connected })
	if err := tl.Subscribe(ctx, "test://a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://a"}); err != nil {
		t.Fatal(err)
	}
	// Nothing to wait for: a call after the notification orders the check.
	if _, err := tl.CallTool(ctx, "echo", nil); err != nil {
		t.Fatal(err)
	}
	if got := value(families(t, m), "toolhostd_pump_updates_received_total", "tooling=obs"); got != 3 || rec.updated.Load() != 3 {
		t.Errorf("served without an observer: counted %v, observer saw %d", got, rec.updated.Load())
	}
}

// TestToolLabelCap: a guest calling ever new tool names cannot grow the
// series without bound.
func TestToolLabelCap(t *testing.T) {
	s := newServer()
	m := metrics.New(metrics.Options{})
	tl := m.Instrument(connect(t, s, "cap"))
	ctx := t.Context()
	for i := range 300 {
		if _, err := tl.CallTool(ctx, fmt.Sprintf("nope-%03d", i), nil); err == nil {
			t.Fatal("an unknown tool succeeded")
		}
	}
	if _, err := tl.CallTool(ctx, "nope-000", nil); err == nil {
		t.Fatal("an unknown tool succeeded")
	}
	f := families(t, m)
	const calls = "toolhostd_tooling_calls_total"
	if n := len(f[calls].GetMetric()); n != 257 {
		t.Errorf("%d series, want 256 names and %s", n, metrics.OtherTool)
	}
	if got := value(f, calls, "tool="+metrics.OtherTool); got != 44 {
		t.Errorf("%s calls = %v, want 44", metrics.OtherTool, got)
	}
	if got := value(f, calls, "tool=nope-000"); got != 2 {
		t.Errorf("nope-000 calls = %v, want 2 (a known name keeps its label)", got)
	}
}

// TestScrape: /metrics of a control server over the metrics registry is
// valid Prometheus text with every family: Go, process, the decorator's,
// the Backend collector's and the hooks'.
func TestScrape(t *testing.T) {
	s := newServer()
	be := controltest.NewBackend() // read at each scrape; filled below
	m := metrics.New(metrics.Options{Source: be})
	inner := newClient(t, s, "fs")
	tl := m.Instrument(inner)
	testenv.ServeTooling(t, tl, &recorder{})
	waitConnected(t, inner)
	ctx := t.Context()
	if _, err := tl.CallTool(ctx, "echo", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tl.ReadResource(ctx, "test://a"); err != nil {
		t.Fatal(err)
	}
	if err := tl.Subscribe(ctx, "test://a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://a"}); err != nil {
		t.Fatal(err)
	}
	s.Server.AddResource(&mcp.Resource{URI: "test://new", Name: "new"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://new", Text: "n"}}}, nil
		})
	testenv.Eventually(t, 30*time.Second, "the notifications", func() bool {
		f := families(t, m)
		return value(f, "toolhostd_pump_updates_received_total", "tooling=fs") == 1 &&
			value(f, "toolhostd_pump_list_changes_received_total", "tooling=fs") >= 1
	})

	be.AddAgent(control.AgentStatus{Name: "odd", State: "paused"})
	be.AddTooling(control.ToolingStatus{Name: "slow", Kind: "mcp", State: "connected", Progress: 7})
	m.AgentTrapped("a")
	m.AgentTrapped("a")
	for range 3 {
		m.AgentLogDropped("a")
	}
	m.AgentInstantiated("a", 40*time.Microsecond)
	m.AgentInstantiated("a", 2*time.Second)

	// An inbox with two coalesced updates and one delivery, replaced by a
	// second one with one more delivery: the counters add up.
	q1 := inbox.New(8)
	m.AgentInbox("a", q1.Stats)
	if err := q1.OpenStream("sub"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		q1.Update("sub", inbox.ResourceUpdated{Content: tooling.ResourceContent{URI: "test://a", Content: fmt.Sprint(i)}})
	}
	if _, ok := q1.TryRecv(); !ok {
		t.Fatal("nothing in the inbox")
	}
	q2 := inbox.New(8)
	m.AgentInbox("a", q2.Stats)
	if err := q2.Reserve("call"); err != nil {
		t.Fatal(err)
	}
	q2.Deliver("call", inbox.ToolResult{})
	if _, ok := q2.TryRecv(); !ok {
		t.Fatal("nothing in the second inbox")
	}

	srv := controltest.Serve(t, control.Options{Backend: be, Gatherer: m.Registry()})
	c, err := control.Dial(srv.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	text, err := c.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	f, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	wantFamilies := map[string]dto.MetricType{
		"go_goroutines":                                  dto.MetricType_GAUGE,
		"process_cpu_seconds_total":                      dto.MetricType_COUNTER,
		"toolhostd_tooling_calls_total":                  dto.MetricType_COUNTER,
		"toolhostd_tooling_call_duration_seconds":        dto.MetricType_HISTOGRAM,
		"toolhostd_tooling_connected":                    dto.MetricType_GAUGE,
		"toolhostd_tooling_in_flight":                    dto.MetricType_GAUGE,
		"toolhostd_tooling_session_restarts_total":       dto.MetricType_COUNTER,
		"toolhostd_tooling_tools":                        dto.MetricType_GAUGE,
		"toolhostd_tooling_progress_notifications_total": dto.MetricType_COUNTER,
		"toolhostd_pump_reads_total":                     dto.MetricType_COUNTER,
		"toolhostd_pump_updates_received_total":          dto.MetricType_COUNTER,
		"toolhostd_pump_list_changes_received_total":     dto.MetricType_COUNTER,
		"toolhostd_agent_deliveries_total":               dto.MetricType_COUNTER,
		"toolhostd_agent_state":                          dto.MetricType_GAUGE,
		"toolhostd_agent_restarts_total":                 dto.MetricType_COUNTER,
		"toolhostd_agent_traps_total":                    dto.MetricType_COUNTER,
		"toolhostd_agent_inbox_depth":                    dto.MetricType_GAUGE,
		"toolhostd_agent_coalesced_updates_total":        dto.MetricType_COUNTER,
		"toolhostd_agent_instantiate_duration_seconds":   dto.MetricType_HISTOGRAM,
		"toolhostd_agent_log_lines_dropped_total":        dto.MetricType_COUNTER,
	}
	var missing []string
	for name, typ := range wantFamilies {
		switch fam := f[name]; {
		case fam == nil:
			missing = append(missing, name)
		case fam.GetType() != typ:
			t.Errorf("%s is a %v, want a %v", name, fam.GetType(), typ)
		case fam.GetHelp() == "":
			t.Errorf("%s has no help", name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("families missing from /metrics: %v", missing)
	}
	for _, tt := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"toolhostd_agent_state", []string{"agent=a", "state=running"}, 1},
		{"toolhostd_agent_state", []string{"agent=a", "state=stopped"}, 0},
		{"toolhostd_agent_state", []string{"agent=b", "state=stopped"}, 1},
		{"toolhostd_agent_state", []string{"agent=odd", "state=paused"}, 1},
		{"toolhostd_agent_state", []string{"agent=odd", "state=running"}, 0},
		{"toolhostd_agent_restarts_total", []string{"agent=a"}, 2},
		{"toolhostd_agent_inbox_depth", []string{"agent=a"}, 3},
		{"toolhostd_agent_traps_total", []string{"agent=a"}, 2},
		{"toolhostd_agent_log_lines_dropped_total", []string{"agent=a"}, 3},
		{"toolhostd_agent_coalesced_updates_total", []string{"agent=a"}, 2},
		{"toolhostd_agent_deliveries_total", []string{"agent=a"}, 2},
		{"toolhostd_tooling_connected", []string{"tooling=fs"}, 1},
		{"toolhostd_tooling_connected", []string{"tooling=web"}, 0},
		{"toolhostd_tooling_in_flight", []string{"tooling=fs"}, 1},
		{"toolhostd_tooling_session_restarts_total", []string{"tooling=web"}, 5},
		{"toolhostd_tooling_tools", []string{"tooling=fs"}, 14},
		{"toolhostd_tooling_progress_notifications_total", []string{"tooling=slow"}, 7},
		{"toolhostd_tooling_progress_notifications_total", []string{"tooling=fs"}, 0},
		{"toolhostd_tooling_calls_total", []string{"tooling=fs", "tool=echo", "outcome=ok"}, 1},
		{"toolhostd_pump_reads_total", []string{"tooling=fs", "outcome=ok"}, 1},
		{"toolhostd_pump_updates_received_total", []string{"tooling=fs"}, 1},
	} {
		if got := value(f, tt.name, tt.labels...); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
	if h := find(f, "toolhostd_agent_instantiate_duration_seconds", "agent=a"); h == nil || h.Histogram.GetSampleCount() != 2 ||
		h.Histogram.GetSampleSum() < 2 {
		t.Errorf("instantiate histogram %v", h)
	}

	// Forgetting drops the series; the Backend's agents and toolings come
	// and go with the Backend.
	m.ForgetAgent("a")
	m.ForgetTooling("fs")
	g := families(t, m)
	for _, name := range []string{"toolhostd_agent_traps_total", "toolhostd_agent_instantiate_duration_seconds", "toolhostd_agent_coalesced_updates_total", "toolhostd_agent_log_lines_dropped_total",
		"toolhostd_agent_deliveries_total", "toolhostd_tooling_calls_total", "toolhostd_pump_reads_total", "toolhostd_pump_updates_received_total"} {
		if g[name] != nil {
			t.Errorf("%s still has %d series", name, len(g[name].GetMetric()))
		}
	}
	if value(g, "toolhostd_agent_state", "agent=a", "state=running") != 1 {
		t.Error("the Backend's agent a is gone from the state")
	}
	if g := families(t, metrics.New(metrics.Options{})); g["toolhostd_agent_state"] != nil || g["toolhostd_tooling_connected"] != nil {
		t.Error("state series without a backend")
	}
}
