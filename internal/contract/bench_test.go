package contract_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// reportLatency reports the p50 and p99 of lat and the throughput of n
// calls in elapsed.
func reportLatency(b *testing.B, lat []time.Duration, elapsed time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Nanoseconds()), "p99-ns")
	if elapsed > 0 {
		b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "calls/s")
	}
}

// callFunc makes one echo call and checks its result.
type callFunc func() error

// runCalls runs b.N calls over par goroutines, each with its own callFunc,
// and reports latency percentiles and throughput.
func runCalls(b *testing.B, par int, mk func(i int) callFunc) {
	fns := make([]callFunc, par)
	for i := range fns {
		fns[i] = mk(i)
	}
	lats := make([][]time.Duration, par)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range par {
		n := b.N / par
		if i < b.N%par {
			n++
		}
		wg.Go(func() {
			lat := make([]time.Duration, 0, n)
			for range n {
				t0 := time.Now()
				if err := fns[i](); err != nil {
					b.Error(err)
					return
				}
				lat = append(lat, time.Since(t0))
			}
			lats[i] = lat
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	reportLatency(b, slices.Concat(lats...), elapsed)
}

// BenchmarkCallEcho compares one echo call on the same in-process go-sdk
// server: baseline is go-sdk's ClientSession.CallTool directly; tooling is
// the mcp tooling's CallTool (no pump); blocking is Handle.CallToolBlocking;
// async is Handle.CallTool then inbox Recv.
// seq makes one call at a time, par16 keeps 16 in flight (16 goroutines,
// each its own agent).
func BenchmarkCallEcho(b *testing.B) {
	e := newEnv(b, envOptions{log: zap.NewNop()})
	ctx := context.Background()
	cs := testenv.DirectSession(b, e.srv.Server, mcpclient.DefaultProtocolVersion)

	const args = `{"text":"hello"}`
	rawArgs := json.RawMessage(args)
	baseline := func(int) callFunc {
		return func() error {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: rawArgs})
			if err == nil && res.IsError {
				err = fmt.Errorf("isError result")
			}
			return err
		}
	}
	// tooling: the mcp tooling's CallTool with no pump, to tell the pump's
	// share of the overhead from the tooling's.
	direct := func(int) callFunc {
		return func() error {
			_, err := e.mcp.CallTool(ctx, "echo", rawArgs)
			return err
		}
	}
	var mu sync.Mutex
	agentN := 0
	newHandle := func() (*contract.Agent, *contract.Handle, *inbox.Inbox) {
		mu.Lock()
		agentN++
		name := fmt.Sprint("bench-", agentN)
		mu.Unlock()
		in := inbox.New(64)
		a := contract.NewAgent(e.hub, name, in, contract.Options{})
		h, err := a.Get("mem")
		if err != nil {
			b.Fatal(err)
		}
		return a, h, in
	}
	var agents []*contract.Agent
	defer func() {
		for _, a := range agents {
			a.Close()
		}
	}()
	blocking := func(int) callFunc {
		a, h, _ := newHandle()
		agents = append(agents, a)
		return func() error {
			_, err := h.CallToolBlocking(ctx, "echo", args)
			return err
		}
	}
	async := func(int) callFunc {
		a, h, in := newHandle()
		agents = append(agents, a)
		return func() error {
			id, err := h.CallTool("echo", args)
			if err != nil {
				return err
			}
			env, ok := in.Recv(ctx, nil)
			if !ok || env.ID != id {
				return fmt.Errorf("recv: %+v %v", env, ok)
			}
			if _, ok := env.Event.(inbox.ToolResult); !ok {
				return fmt.Errorf("event %+v", env.Event)
			}
			return nil
		}
	}
	for _, mode := range []struct {
		name string
		par  int
	}{{"seq", 1}, {"par16", 16}} {
		b.Run(mode.name, func(b *testing.B) {
			b.Run("baseline", func(b *testing.B) { runCalls(b, mode.par, baseline) })
			b.Run("tooling", func(b *testing.B) { runCalls(b, mode.par, direct) })
			b.Run("blocking", func(b *testing.B) { runCalls(b, mode.par, blocking) })
			b.Run("async", func(b *testing.B) { runCalls(b, mode.par, async) })
		})
	}
}

// BenchmarkFanout1000 fans one read resource content out to 1,000
// subscribers' inboxes (one agent each, one shared MCP subscription) and
// reports the p99 of one fan-out.
func BenchmarkFanout1000(b *testing.B) {
	const n = 1000
	e := newEnv(b, envOptions{log: zap.NewNop()})
	ins := make([]*inbox.Inbox, n)
	for i := range n {
		in := inbox.New(16)
		a := contract.NewAgent(e.hub, fmt.Sprint("fan-", i), in, contract.Options{})
		defer a.Close()
		h, err := a.Get("mem")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := h.SubscribeResource(context.Background(), "test://r0"); err != nil {
			b.Fatal(err)
		}
		ins[i] = in
	}
	if got := subscribes(e, "test://r0"); got != 1 {
		b.Fatalf("%d MCP subscribes for %d subscribers", got, n)
	}
	mime := "text/plain"
	rc := tooling.ResourceContent{URI: "test://r0", MIMEType: &mime, Content: "fresh content"}
	served, ok := e.hub.Lookup("mem")
	if !ok {
		b.Fatal("no tooling mem")
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if got := served.Fanout(rc); got != n {
			b.Fatalf("fanned out to %d", got)
		}
		lat = append(lat, time.Since(t0))
		b.StopTimer()
		for _, in := range ins {
			if _, ok := in.TryRecv(); !ok {
				b.Fatal("an inbox got nothing")
			}
		}
		b.StartTimer()
	}
	b.StopTimer()
	reportLatency(b, lat, 0)
}
