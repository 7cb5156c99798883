package host

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/toolhostd/toolhostd/internal/engine"
	"github.com/toolhostd/toolhostd/internal/testenv"
	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// benchAgents is how many agents the scale benchmarks start:
// TOOLHOSTD_BENCH_AGENTS (make bench N=1000), default 100.
func benchAgents(b *testing.B) int {
	if s := os.Getenv("TOOLHOSTD_BENCH_AGENTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("TOOLHOSTD_BENCH_AGENTS=%q: want a positive count", s)
		}
		return n
	}
	return 100
}

// ranLine is the log line of ranInput's first step; ranInput then waits in
// recv until its shutdown envelope.
const (
	ranLine  = "probe-ran"
	ranInput = `{"steps": [{"op": "log", "level": "warn", "message": "` + ranLine + `"}, {"op": "recv"}]}`
)

// BenchmarkIdleAgents: start N idle JS agents (the probe waiting in recv)
// of one component at once, as a starting daemon does, until every one is
// instantiated and in run, and until every one's first step ran; then stop
// them. baseline loads the component for every agent (LoadFile: read, hash,
// check the cache entry, map it, link), as the daemon did before Open;
// shared opens it once for all (Open); shared-noprefault is shared without
// package prefault (each agent takes its copy-on-write faults and their TLB
// shootdowns itself); pooled is shared on wasmtime's pooling allocator.
// Per op: the N agents. Reported: ns/agent (instantiated, per agent),
// ran-ns/agent (its first step ran: the guest's own start included) and the
// idle memory per agent (PSS and its parts, see memParts).
func BenchmarkIdleAgents(b *testing.B) {
	s := env(b)
	n := benchAgents(b)
	path, err := testenv.AgentPath(s.root, "test-agents", "probe")
	if err != nil {
		b.Fatal(err)
	}
	s.program(b, "test-agents", "probe") // the compile cache has the entry
	slots := uint32(n + 16)
	pooling := &wt.PoolingConfig{ComponentInstances: slots, CoreInstances: 32 * slots, Memories: 4 * slots, Tables: 8 * slots}
	b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
		for _, v := range []struct {
			name   string
			opts   Options
			shared bool
		}{
			{"baseline", Options{}, false},
			{"shared", Options{}, true},
			{"shared-noprefault", Options{Engine: engine.Options{NoPrefault: true}}, true},
			{"pooled", Options{Engine: engine.Options{Pooling: pooling}}, true},
		} {
			b.Run(v.name, func(b *testing.B) {
				var ran atomic.Int64
				opts := v.opts
				opts.Engine.CacheDir = s.host.Cache().Dir()
				opts.Log = ranCounter(&ran)
				h, err := New(opts, s.hub)
				if err != nil {
					b.Fatal(err)
				}
				defer h.Close()
				open := h.LoadFile
				if v.shared {
					open = h.Open
				}
				idleAgents(b, h, n, open, path, &ran)
			})
		}
	})
}

// ranCounter is a logger that counts the ranLine lines it is given.
func ranCounter(n *atomic.Int64) *zap.Logger {
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(io.Discard), zapcore.WarnLevel)
	return zap.New(core, zap.Hooks(func(e zapcore.Entry) error {
		if e.Message == ranLine {
			n.Add(1)
		}
		return nil
	}))
}

func idleAgents(b *testing.B, h *Host, n int, open func(string) (*Program, error), path string, ran *atomic.Int64) {
	var startNS, mem memParts
	for b.Loop() {
		debug.FreeOSMemory()
		before := readMem(b)
		ran.Store(0)
		var started sync.WaitGroup
		started.Add(n)
		agents := make([]*Agent, n)
		progs := make([]*Program, n)
		t0 := time.Now()
		var loads sync.WaitGroup
		for i := range n {
			loads.Go(func() {
				p, err := open(path)
				if err != nil {
					b.Error(err)
					started.Done()
					return
				}
				progs[i] = p
				agents[i] = h.Start(p, AgentConfig{Name: fmt.Sprintf("idle-%d", i), OnStarted: func(time.Duration) { started.Done() }, Limits: AgentLimits{StopGrace: 30 * time.Second}}, ranInput)
			})
		}
		loads.Wait()
		started.Wait()
		took := time.Since(t0)
		for ran.Load() < int64(n) && !b.Failed() {
			time.Sleep(100 * time.Microsecond)
		}
		tookRan := time.Since(t0)
		b.StopTimer()
		debug.FreeOSMemory() // garbage of the loads is not an agent's
		after := readMem(b)
		for _, a := range agents {
			if a != nil {
				a.Stop()
			}
		}
		for i, a := range agents {
			if a == nil {
				continue
			}
			if _, err := a.Wait(); err != nil {
				b.Errorf("idle agent %d: %v", i, err)
			}
			progs[i].Close()
		}
		b.StartTimer()
		startNS.add("ns/agent", float64(took.Nanoseconds())/float64(n))
		startNS.add("ran-ns/agent", float64(tookRan.Nanoseconds())/float64(n))
		mem.addDiff(after, before, n)
	}
	startNS.report(b)
	mem.report(b)
}

// memParts accumulates per-agent metrics over the b.Loop iterations.
type memParts struct {
	order []string
	sum   map[string]float64
	count int
}

func (m *memParts) add(unit string, v float64) {
	if m.sum == nil {
		m.sum = map[string]float64{}
	}
	if _, ok := m.sum[unit]; !ok {
		m.order = append(m.order, unit)
	}
	m.sum[unit] += v
	if unit == m.order[0] {
		m.count++
	}
}

func (m *memParts) addDiff(after, before map[string]float64, n int) {
	for _, k := range memKeys {
		m.add(k, (after[k]-before[k])/float64(n))
	}
}

func (m *memParts) report(b *testing.B) {
	for _, u := range m.order {
		b.ReportMetric(m.sum[u]/float64(max(m.count, 1)), u)
	}
}

// memKeys are the memory parts reported, in bytes: the process's PSS and
// its split by mapping: the guest linear memories' pages that wasmtime
// maps copy-on-write from the .cwasm's memory image (writable mappings of
// the .cwasm; their pages beyond the image are anonymous and counted in
// other), the compiled code (the rest of the .cwasm), thread stacks (8 MiB
// anonymous mappings: one OS thread per agent waiting in a host call), the
// Go heap (in use), and the rest (malloc: wasmtime's instance state and
// tables, the Go runtime's other memory).
var memKeys = []string{"pss-B/agent", "linear-B/agent", "code-B/agent", "stacks-B/agent", "goheap-B/agent", "other-B/agent"}

// readMem reads /proc/self/smaps and the Go heap into memKeys parts.
func readMem(b *testing.B) map[string]float64 {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		b.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	out := map[string]float64{}
	var size int64
	var name, perms string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 {
			continue
		}
		if strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":") { // a mapping header
			var lo, hi uint64
			fmt.Sscanf(fs[0], "%x-%x", &lo, &hi)
			size = int64(hi - lo)
			name, perms = "", fs[1]
			if len(fs) >= 6 {
				name = fs[5]
			}
			continue
		}
		if fs[0] != "Pss:" || len(fs) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(fs[1], 64)
		v := kb * 1024
		out["pss-B/agent"] += v
		switch {
		case strings.HasSuffix(name, ".cwasm") && perms == "rw-p":
			out["linear-B/agent"] += v // the memory image, mapped copy-on-write into a linear memory
		case strings.HasSuffix(name, ".cwasm"):
			out["code-B/agent"] += v
		case size == 8<<20 && name == "":
			out["stacks-B/agent"] += v
		default:
			out["other-B/agent"] += v
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	out["goheap-B/agent"] = float64(ms.HeapInuse)
	out["other-B/agent"] -= float64(ms.HeapInuse) // the heap is anonymous memory too
	return out
}
