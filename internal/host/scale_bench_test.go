package host

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	wt "github.com/toolhostd/toolhostd/internal/host/wasmtime"
	"github.com/toolhostd/toolhostd/internal/testenv"
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

// idleInput makes the probe wait in recv until its shutdown envelope.
const idleInput = `{"steps": [{"op": "recv"}]}`

// BenchmarkIdleAgents: start N idle JS agents (the probe waiting in recv)
// of one component at once, as a starting daemon does, until every one is
// instantiated and in run; then stop them. baseline loads the component
// for every agent (LoadFile: read, hash, check the cache entry, map it,
// link), as the daemon did before Open; shared opens it once for all
// (Open). Per op: the N agents. Reported: ns/agent (start, per agent) and
// the idle memory per agent (PSS and its parts, see memParts).
func BenchmarkIdleAgents(b *testing.B) {
	s := env(b)
	n := benchAgents(b)
	path, err := testenv.AgentPath(s.root, "test-agents", "probe")
	if err != nil {
		b.Fatal(err)
	}
	s.program(b, "test-agents", "probe") // the compile cache has the entry
	b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
		b.Run("baseline", func(b *testing.B) { idleAgents(b, s.host, n, s.host.LoadFile, path) })
		b.Run("shared", func(b *testing.B) { idleAgents(b, s.host, n, s.host.Open, path) })
		b.Run("pooled", func(b *testing.B) {
			// shared, on an engine with wasmtime's pooling allocator.
			slots := uint32(n + 16)
			h, err := New(Options{CacheDir: s.host.Cache().Dir(), Log: s.log, Pooling: &wt.PoolingConfig{
				ComponentInstances: slots, CoreInstances: 32 * slots, Memories: 4 * slots, Tables: 8 * slots,
			}}, s.hub)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			idleAgents(b, h, n, h.Open, path)
		})
	})
}

func idleAgents(b *testing.B, h *Host, n int, open func(string) (*Program, error), path string) {
	var startNS, mem memParts
	for b.Loop() {
		debug.FreeOSMemory()
		before := readMem(b)
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
				agents[i] = h.Start(p, AgentConfig{Name: fmt.Sprintf("idle-%d", i), StopGrace: 30 * time.Second, OnStarted: func(time.Duration) { started.Done() }}, idleInput)
			})
		}
		loads.Wait()
		started.Wait()
		took := time.Since(t0)
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
