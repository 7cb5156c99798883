package main

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/toolhostd/toolhostd/sdk/go/toolhost"
)

// gcStress calls every import of the world s.N times against the tooling
// s.Name (the contract tests' in-process server: tools echo, fail, slow,
// gate; resources test://text and the test://sub/ ones), with runtime.GC()
// between calls and s.MB MB allocated and dropped each round, and checks
// every result: memory the host wrote must survive the collections until
// it is lifted, and nothing the guest passes may move under the host.
// It returns the number of checked calls.
func gcStress(s *step) (any, error) {
	var sink [][]byte
	calls := 0
	gc := func() {
		runtime.GC()
		calls++
	}
	for i := range s.N {
		// Garbage, and a live pointer-rich structure, so that the
		// collector has work and reuses freed memory.
		sink = sink[:0]
		for range s.MB {
			b := make([]byte, 1<<20)
			b[0], b[len(b)-1] = byte(i), byte(i)
			sink = append(sink, b)
		}
		junk := make(map[string][]string)
		for j := range 1000 {
			junk[fmt.Sprint(j)] = []string{strings.Repeat("x", j%50)}
		}
		gc()
		t, err := toolhost.Get(s.Name)
		if err != nil {
			return nil, fmt.Errorf("round %d: get: %w", i, err)
		}
		gc()
		if k, n := t.Kind(), t.Name(); k != "mcp" || n != s.Name {
			return nil, fmt.Errorf("round %d: kind %q name %q", i, k, n)
		}
		gc()
		tools, err := t.ListTools()
		if err != nil || len(tools) != 4 {
			return nil, fmt.Errorf("round %d: list-tools: %d tools, %v", i, len(tools), err)
		}
		for _, tl := range tools {
			if tl.Description == nil || !strings.HasPrefix(tl.InputSchema, "{") {
				return nil, fmt.Errorf("round %d: tool %+v", i, tl)
			}
		}
		gc()
		text := fmt.Sprintf("gc-%d-%s", i, strings.Repeat("é", i%40))
		id, err := t.CallTool("echo", map[string]any{"text": text})
		if err != nil {
			return nil, fmt.Errorf("round %d: call-tool: %w", i, err)
		}
		gc()
		t.IsOpen(id)
		gc()
		// The last round's result is 2 x 2.2 MB (the arguments and the
		// value carry the text): more than half the region cabi_realloc
		// lowers results into, which is then replaced by a larger one.
		big := text + "-blocking"
		if i == s.N-1 {
			big += strings.Repeat("x", 2200<<10)
		}
		r, err := t.CallToolBlocking("echo", map[string]any{"text": big})
		if err != nil {
			return nil, fmt.Errorf("round %d: call-tool-blocking: %w", i, err)
		}
		gc()
		if v, err := r.Result(); err != nil || v.Text() != big || r.Name != "echo" {
			return nil, fmt.Errorf("round %d: blocking result of %d bytes wrong (%v)", i, len(r.Value), err)
		}
		env, ok := toolhost.Recv(20 * time.Second)
		gc()
		tr, isResult := env.Event.(toolhost.ToolResultEvent)
		if !ok || env.ID != id || !isResult {
			return nil, fmt.Errorf("round %d: recv %v %+v", i, ok, env)
		}
		if v, err := tr.Result.Result(); err != nil || v.Text() != text {
			return nil, fmt.Errorf("round %d: envelope result %+v (%v)", i, tr.Result, err)
		}
		if t.IsOpen(id) || t.Cancel(id) {
			return nil, fmt.Errorf("round %d: a received call is still open", i)
		}
		gc()
		res, err := t.ListResources()
		if err != nil || len(res) < 8 {
			return nil, fmt.Errorf("round %d: list-resources: %d, %v", i, len(res), err)
		}
		gc()
		c, err := t.ReadResource("test://text")
		if err != nil || c.Content != "hello, text" || c.MIMEType == nil || *c.MIMEType != "text/plain" {
			return nil, fmt.Errorf("round %d: read-resource %+v, %v", i, c, err)
		}
		gc()
		l, err := t.SubscribeResourceList()
		if err != nil || len(l) != 36 {
			return nil, fmt.Errorf("round %d: subscribe-resource-list %q, %v", i, l, err)
		}
		gc()
		sub, err := t.SubscribeResource("test://sub/basic")
		if err != nil || len(sub) != 36 {
			return nil, fmt.Errorf("round %d: subscribe-resource %q, %v", i, sub, err)
		}
		gc()
		if !t.UnsubscribeResource(sub) || !t.UnsubscribeResourceList(l) {
			return nil, fmt.Errorf("round %d: unsubscribe failed", i)
		}
		gc()
		if _, ok := toolhost.TryRecv(); ok || toolhost.Pending() != 0 {
			return nil, fmt.Errorf("round %d: an unexpected envelope", i)
		}
		gc()
		toolhost.Logf(toolhost.LevelDebug, "gc-stress round %d", i)
		gc()
		if err := t.Close(); err != nil {
			return nil, err
		}
		gc()
		for _, b := range sink {
			if b[0] != byte(i) || b[len(b)-1] != byte(i) {
				return nil, fmt.Errorf("round %d: an allocation changed under the host", i)
			}
		}
		if len(junk) != 1000 {
			return nil, fmt.Errorf("round %d: junk lost", i)
		}
	}
	return calls, nil
}
