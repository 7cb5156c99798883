package metrics

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Instrument wraps t so that its calls, reads and notifications are
// counted: CallTool by tool and outcome with its latency, ReadResource by
// outcome, and, on their way to the observer Serve is given, the resource
// updates and list changes received and the failed re-subscriptions
// (served without one, nothing is counted). Every other method is t's
// own. Unwrap returns t (for its Status, say).
func (m *Metrics) Instrument(t tooling.Tooling) tooling.Tooling {
	name := t.Name()
	return &instrumented{
		Tooling:     t,
		m:           m,
		name:        name,
		updates:     m.pump.updates.WithLabelValues(name),
		listChanges: m.pump.listChanges.WithLabelValues(name),
		resubFailed: m.tooling.resubFailed.WithLabelValues(name),
	}
}

// Unwrapper is implemented by an instrumented Tooling.
type Unwrapper interface {
	Unwrap() tooling.Tooling
}

type instrumented struct {
	tooling.Tooling
	m    *Metrics
	name string

	updates, listChanges, resubFailed prometheus.Counter

	mu    sync.RWMutex
	tools map[string]struct{} // tool label values in use, at most maxToolLabels
}

func (i *instrumented) Unwrap() tooling.Tooling { return i.Tooling }

// toolLabel is tool, or OtherTool once maxToolLabels names are in use.
func (i *instrumented) toolLabel(tool string) string {
	i.mu.RLock()
	_, ok := i.tools[tool]
	n := len(i.tools)
	i.mu.RUnlock()
	if ok {
		return tool
	}
	if n >= maxToolLabels {
		return OtherTool
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.tools == nil {
		i.tools = map[string]struct{}{}
	}
	if _, ok := i.tools[tool]; !ok && len(i.tools) >= maxToolLabels {
		return OtherTool
	}
	i.tools[tool] = struct{}{}
	return tool
}

func (i *instrumented) CallTool(ctx context.Context, name string, args json.RawMessage) (tooling.ToolResult, error) {
	start := time.Now()
	res, err := i.Tooling.CallTool(ctx, name, args)
	d := time.Since(start)
	outcome := OutcomeOK
	switch {
	case err != nil:
		outcome = tooling.CodeOf(err).String()
	case isError(res.Value):
		outcome = OutcomeToolError
	}
	tool := i.toolLabel(name)
	i.m.tooling.calls.WithLabelValues(i.name, tool, outcome).Inc()
	i.m.tooling.callSeconds.WithLabelValues(i.name, tool).Observe(d.Seconds())
	return res, err
}

// isError reports whether an MCP CallToolResult's JSON text has the member
// "isError" (exactly that key, as MCP spells it) set to true. go-sdk omits
// a false isError, so the full decode only happens for tool errors.
func isError(value string) bool {
	if !strings.Contains(value, `"isError"`) {
		return false
	}
	var r map[string]json.RawMessage
	if json.Unmarshal([]byte(value), &r) != nil {
		return false
	}
	return string(r["isError"]) == "true"
}

func (i *instrumented) ReadResource(ctx context.Context, uri string) (tooling.ResourceContent, error) {
	c, err := i.Tooling.ReadResource(ctx, uri)
	outcome := OutcomeOK
	if err != nil {
		outcome = tooling.CodeOf(err).String()
	}
	i.m.pump.reads.WithLabelValues(i.name, outcome).Inc()
	return c, err
}

// Serve serves t, counting the notifications on their way to o.
func (i *instrumented) Serve(ctx context.Context, o tooling.Observer) error {
	if o == nil {
		return i.Tooling.Serve(ctx, nil)
	}
	return i.Tooling.Serve(ctx, &countingObserver{o: o, i: i})
}

// countingObserver counts notifications, then passes them on.
type countingObserver struct {
	o tooling.Observer
	i *instrumented
}

func (c *countingObserver) ResourceUpdated(uri string) {
	c.i.updates.Inc()
	c.o.ResourceUpdated(uri)
}

func (c *countingObserver) ResourceListChanged() {
	c.i.listChanges.Inc()
	c.o.ResourceListChanged()
}

func (c *countingObserver) ResubscribeFailed(uri string, err error) {
	c.i.resubFailed.Inc()
	c.o.ResubscribeFailed(uri, err)
}
