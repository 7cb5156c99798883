package host

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/toolhostd/toolhostd/internal/oplog"
)

// The durable-agent benchmarks (docs/performance.md, "Durable agents"):
// what AgentConfig.Durable costs a call-tool-blocking, alone and with 100
// instances calling at once, and how fast an oplog is replayed. Each
// measures its baseline in the same run (a sub-benchmark named baseline,
// which benchtable divides by). The guest is the bench agent
// (testdata/agents/bench.js) built with componentize-qjs
// (build/test-agents-qjs/bench.wasm) throughout; its oplogs live in
// b.TempDir(), that is under os.TempDir() (/tmp unless TMPDIR says
// otherwise), so the fsyncs measured are that filesystem's.

// durableGuest is the toolchain of the durable benchmarks.
const durableGuest = guestQJS

// durableCallEntries is what the journal appends per call-tool-blocking:
// started before it is issued, completed after.
const durableCallEntries = 2

// echoInput is the bench agent's input: n call-tool-blocking of the
// in-memory echo.
func echoInput(n int) map[string]any {
	return map[string]any{"tooling": "mem", "tool": "echo", "arguments": echoArgs, "n": n}
}

// oplogStore opens a store on a fresh file in b.TempDir(), closed at
// cleanup.
func oplogStore(b *testing.B) *oplog.Store {
	b.Helper()
	st, err := oplog.Open(oplog.Options{Path: filepath.Join(b.TempDir(), "oplog.db")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// openOplog opens the log key of st for an instance of p.
func openOplog(b *testing.B, st *oplog.Store, key string, p *Program) *oplog.Log {
	b.Helper()
	l, err := st.Open(key, oplog.Header{Component: p.Content(), Started: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

var oplogKeys atomic.Int64

// uniqueKey is a log key no other log of the process has.
func uniqueKey(prefix string) string { return fmt.Sprintf("%s/%d", prefix, oplogKeys.Add(1)) }

// fixedEntries is what a durable bench agent of p records when it makes
// no call (n = 0): the entries and bytes that are not its calls' (none, if
// the guest reads no clock or random number before its loop).
func fixedEntries(b *testing.B, s *suite, p *Program, st *oplog.Store) (int, int64) {
	b.Helper()
	l := openOplog(b, st, uniqueKey("fixed"), p)
	runBenchAgent(b, s, p, AgentConfig{Name: "bench", Durable: Durability{Oplog: l}}, echoInput(0), 0)
	n, bytes := l.Len()
	if err := l.Delete(); err != nil {
		b.Fatal(err)
	}
	return n, bytes
}

// p50 is the median of ds, in ns.
func p50(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return float64(ds[len(ds)/2])
}

// callEntrySize is about the stored size of one entry of a call-tool-
// blocking of echo (oplog-B/call is two of them): the value the fsync
// variant commits.
const callEntrySize = 160

// bareCommit opens a bbolt file in dir with the oplog's options and
// returns a function that commits one transaction putting one
// callEntrySize value under the next key: a bare bbolt commit, which
// fdatasyncs twice (the pages, then the meta page).
func bareCommit(b *testing.B, dir string) func() error {
	b.Helper()
	db, err := bolt.Open(filepath.Join(dir, "bare.db"), 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	value := make([]byte, callEntrySize)
	var seq uint64
	return func() error {
		seq++
		return db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("entries"))
			if err != nil {
				return err
			}
			bk.FillPercent = 0.9
			return bk.Put(binary.BigEndian.AppendUint64(nil, seq), value)
		})
	}
}

// fsyncsPerRound is how many bare commits BenchmarkDurableParallel100
// measures per round: 20 beside the durable calls, none beside the others.
func fsyncsPerRound(durable bool) int {
	if durable {
		return 20
	}
	return 0
}

// BenchmarkDurableCallBlocking: one componentize-qjs bench agent making
// b.N call-tool-blocking of the in-memory echo, each timed in the guest
// (performance.now()): p50-ns. baseline is the agent not durable; on is
// it with an oplog (two appends per call, each its own transaction: one
// instance appends alone), also reporting the oplog's stored bytes per
// call (oplog-B/call), the p50's difference to this run's baseline
// (delta-ns) and that difference in bare bbolt commits (overhead-fsyncs,
// over this run's fsync p50). fsync is one bare bbolt transaction commit
// of a value of a call entry's size on the same filesystem (p50-ns); append
// is one oplog.Log.Append of such an entry, alone (the committer's
// hand-off included): what each of on's two appends costs.
func BenchmarkDurableCallBlocking(b *testing.B) {
	s := env(b)
	p := s.program(b, durableGuest.dir(), "bench")
	var offP50, fsyncP50 float64
	b.Run("baseline", func(b *testing.B) {
		b.ResetTimer()
		ds := runBenchAgent(b, s, p, AgentConfig{Name: "bench"}, echoInput(b.N), b.N)
		offP50 = p50(ds)
		reportPercentiles(b, ds)
	})
	b.Run("fsync", func(b *testing.B) {
		commit := bareCommit(b, b.TempDir())
		ds := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			if err := commit(); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
		fsyncP50 = p50(ds)
		reportPercentiles(b, ds)
	})
	for _, locked := range []bool{false, true} {
		name := "append"
		if locked {
			name = "append-locked"
		}
		b.Run(name, func(b *testing.B) {
			st := oplogStore(b)
			l := openOplog(b, st, "append", p)
			defer l.Close()
			e := oplog.Entry{Kind: oplog.KindCompleted, Call: "toolhost:agent/tooling@0.3.0#[method]tooling.call-tool-blocking",
				Data: make([]byte, callEntrySize-90)}
			before := st.Stats()
			done := make(chan []time.Duration)
			go func() {
				if locked {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
				}
				ds := make([]time.Duration, 0, b.N)
				for range b.N {
					start := time.Now()
					if _, err := l.Append(e); err != nil {
						b.Error(err)
						break
					}
					ds = append(ds, time.Since(start))
				}
				done <- ds
			}()
			reportPercentiles(b, <-done)
			if after := st.Stats(); after.Appends > before.Appends {
				b.ReportMetric(float64(after.Bytes-before.Bytes)/float64(after.Appends-before.Appends), "B/append")
			}
		})
	}
	b.Run("on", func(b *testing.B) {
		st := oplogStore(b)
		fixed, fixedBytes := fixedEntries(b, s, p, st)
		l := openOplog(b, st, uniqueKey("on"), p)
		defer l.Close()
		calls := s.mem.Calls("echo")
		b.ResetTimer()
		ds := runBenchAgent(b, s, p, AgentConfig{Name: "bench", Durable: Durability{Oplog: l}}, echoInput(b.N), b.N)
		b.StopTimer()
		n, bytes := l.Len()
		if want := fixed + durableCallEntries*b.N; n != want {
			b.Fatalf("the oplog holds %d entries after %d calls, want %d: the calls were not recorded", n, b.N, want)
		}
		if got := s.mem.Calls("echo") - calls; got != int64(b.N) {
			b.Fatalf("the server saw %d calls of %d", got, b.N)
		}
		reportPercentiles(b, ds)
		b.ReportMetric(float64(bytes-fixedBytes)/float64(b.N), "oplog-B/call")
		if offP50 > 0 {
			b.ReportMetric(p50(ds)-offP50, "delta-ns")
			if fsyncP50 > 0 {
				b.ReportMetric((p50(ds)-offP50)/fsyncP50, "overhead-fsyncs")
			}
		}
	})
}

// parallelAgents and parallelCalls: BenchmarkDurableParallel100 starts
// parallelAgents instances each making parallelCalls calls.
const (
	parallelAgents = 100
	parallelCalls  = 20
)

var gateTags atomic.Int64

// BenchmarkDurableParallel100: 100 componentize-qjs bench agents making 20
// call-tool-blocking each, all at once: every agent's first call is of
// the in-memory server's gate tool, held until the 100 agents are started
// and calling (the tooling runs 64 calls at once, the rest wait in its
// queue), then released; their 2,000 calls are timed from the release to
// the last agent's end (ns/call: wall time per call, the 100 instances'
// calls overlapping) and each in its guest (p50-ns, the first call, which
// waited at the gate, left out); cpu-ns/call is the process's CPU time
// (user and system) over the timed part per call, sys-ns/call the system
// part of it. baseline is not
// durable; on gives each agent an oplog of one shared store (as a host
// does), reporting the transactions per append (commits/append, over the
// timed part: 0.01 would be 100 appends per fsync), the difference of
// ns/call to this run's baseline (delta-ns/call) and that difference in
// bare bbolt commits (overhead-fsyncs, over fsync-ns: the p50 of 20 bare
// commits per round, made while the agents wait at the gate). ns/op
// covers the timed part only (not the starts, nor deleting the oplogs).
func BenchmarkDurableParallel100(b *testing.B) {
	s := env(b)
	p := s.program(b, durableGuest.dir(), "bench")
	inFlight := min(parallelAgents, toolingConfig("mem").MaxConcurrentCalls)
	var offPerCall float64
	for _, durable := range []bool{false, true} {
		name := "baseline"
		if durable {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			var st *oplog.Store
			var fixed int
			var commit func() error
			var fsyncs []time.Duration // bare commits, measured beside the calls
			if durable {
				st = oplogStore(b)
				fixed, _ = fixedEntries(b, s, p, st)
				commit = bareCommit(b, b.TempDir())
				for range 200 { // the file grown to its working size
					if err := commit(); err != nil {
						b.Fatal(err)
					}
				}
			}
			var window time.Duration
			var lat []time.Duration
			var appends, commits uint64
			var user, sys time.Duration
			for b.Loop() {
				b.StopTimer()
				tag := fmt.Sprintf("durable-parallel-%d", gateTags.Add(1))
				in := map[string]any{"tooling": "mem", "tool": "gate", "arguments": map[string]string{"tag": tag}, "n": parallelCalls}
				text, _ := json.Marshal(in)
				logs := make([]*oplog.Log, parallelAgents)
				agents := make([]*Agent, parallelAgents)
				var started sync.WaitGroup
				started.Add(parallelAgents)
				if durable {
					openOplogs(b, st, p, logs)
				}
				gates, recorded := s.mem.Calls("gate"), statsOf(st).Entries
				for i := range agents {
					cfg := AgentConfig{Name: "bench", OnStarted: func(time.Duration) { started.Done() }, Durable: Durability{Oplog: logs[i]}}
					agents[i] = s.host.Start(p, cfg, string(text))
				}
				started.Wait()
				deadline := time.Now().Add(time.Minute)
				for s.mem.Calls("gate")-gates < int64(inFlight) {
					if time.Now().After(deadline) {
						b.Fatalf("%d of %d agents at the gate after a minute", s.mem.Calls("gate")-gates, inFlight)
					}
					time.Sleep(time.Millisecond)
				}
				// The agents past the tooling's 64 are queued behind them
				// (a durable one's first call recorded as started).
				for durable && st.Stats().Entries-recorded < uint64(parallelAgents) {
					time.Sleep(time.Millisecond)
				}
				time.Sleep(20 * time.Millisecond)
				for range fsyncsPerRound(durable) { // while the agents wait at the gate
					start := time.Now()
					if err := commit(); err != nil {
						b.Fatal(err)
					}
					fsyncs = append(fsyncs, time.Since(start))
				}
				before := statsOf(st)
				user0, sys0 := cpuTime(b)
				b.StartTimer()
				t0 := time.Now()
				s.mem.OpenGate(tag)
				outs := make([]string, parallelAgents)
				errs := make([]error, parallelAgents)
				for i, a := range agents {
					outs[i], errs[i] = a.Wait()
				}
				window += time.Since(t0)
				b.StopTimer()
				user1, sys1 := cpuTime(b)
				user, sys = user+user1-user0, sys+sys1-sys0
				after := statsOf(st)
				appends += after.Appends - before.Appends
				commits += after.Commits - before.Commits
				for i := range agents {
					if errs[i] != nil {
						b.Fatalf("agent %d: %v", i, errs[i])
					}
					var res struct {
						NS     []int64 `json:"ns"`
						Errors int     `json:"errors"`
					}
					if err := json.Unmarshal([]byte(outs[i]), &res); err != nil || res.Errors != 0 || len(res.NS) != parallelCalls {
						b.Fatalf("agent %d said %.200q (%v)", i, outs[i], err)
					}
					lat = append(lat, durations(res.NS[1:])...)
				}
				if durable {
					var wg sync.WaitGroup
					for i, l := range logs {
						if n, _ := l.Len(); n != fixed+durableCallEntries*parallelCalls {
							b.Fatalf("agent %d's oplog holds %d entries after %d calls, want %d", i, n, parallelCalls, fixed+durableCallEntries*parallelCalls)
						}
						wg.Go(func() {
							if err := l.Delete(); err != nil {
								b.Error(err)
							}
						})
					}
					wg.Wait()
				}
				b.StartTimer()
			}
			perCall := float64(window.Nanoseconds()) / float64(b.N*parallelAgents*parallelCalls)
			b.ReportMetric(perCall, "ns/call")
			b.ReportMetric(p50(lat), "p50-ns")
			b.ReportMetric(float64((user+sys).Nanoseconds())/float64(b.N*parallelAgents*parallelCalls), "cpu-ns/call")
			b.ReportMetric(float64(sys.Nanoseconds())/float64(b.N*parallelAgents*parallelCalls), "sys-ns/call")
			if !durable {
				offPerCall = perCall
				return
			}
			if appends > 0 {
				b.ReportMetric(float64(commits)/float64(appends), "commits/append")
			}
			fsync := p50(fsyncs)
			b.ReportMetric(fsync, "fsync-ns")
			if offPerCall > 0 {
				b.ReportMetric(perCall-offPerCall, "delta-ns/call")
				b.ReportMetric((perCall-offPerCall)/fsync, "overhead-fsyncs")
			}
		})
	}
}

// openOplogs opens a log of st for each of logs, at once (their
// creations share transactions).
func openOplogs(b *testing.B, st *oplog.Store, p *Program, logs []*oplog.Log) {
	b.Helper()
	errs := make([]error, len(logs))
	var wg sync.WaitGroup
	for i := range logs {
		wg.Go(func() {
			logs[i], errs[i] = st.Open(uniqueKey("parallel"), oplog.Header{Component: p.Content(), Started: time.Now()})
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// statsOf is st's Stats; zero without a store.
func statsOf(st *oplog.Store) oplog.Stats {
	if st == nil {
		return oplog.Stats{}
	}
	return st.Stats()
}

// replayCalls is how many calls BenchmarkDurableReplay's oplog records.
const replayCalls = 1000

// BenchmarkDurableReplay: the componentize-qjs bench agent's 1,000
// call-tool-blocking of echo are recorded once (durable, live) into an
// oplog; then each iteration starts a fresh instance on a copy of that
// oplog file, which answers the 1,000 calls from the oplog (the server
// sees none, and the oplog gains no entry: the agent's run returns after
// its last call, so nothing is live) and returns. ms/replay (and ns/op) is
// from Start to the run's end: instantiation, the replay and the guest's
// own work; entries/s the oplog's entries over that; open-ms is opening
// the copied files (bbolt's and its journal, as a crash left them: the
// store folds the journal's records into bbolt) and the log (reading and
// verifying its entries), which a restart does before the Start and
// ns/op leaves out; file-B the bbolt file's size. baseline is the same
// agent with nothing to do (n = 0, not durable): instantiate and run,
// ms/replay the same span. live is the 1,000 calls made for real, not
// durable, for comparison.
func BenchmarkDurableReplay(b *testing.B) {
	s := env(b)
	p := s.program(b, durableGuest.dir(), "bench")
	b.Run("baseline", func(b *testing.B) {
		ds := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			runBenchAgent(b, s, p, AgentConfig{Name: "bench"}, echoInput(0), 0)
			ds = append(ds, time.Since(start))
		}
		b.ReportMetric(p50(ds)/1e6, "ms/replay")
	})

	// The recording.
	dir := b.TempDir()
	path := filepath.Join(dir, "recorded.db")
	st, err := oplog.Open(oplog.Options{Path: path})
	if err != nil {
		b.Fatal(err)
	}
	fixed, _ := fixedEntries(b, s, p, st)
	const key = "bench/replay"
	l, err := st.Open(key, oplog.Header{Component: p.Content(), Started: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	calls := s.mem.Calls("echo")
	runBenchAgent(b, s, p, AgentConfig{Name: "bench", Durable: Durability{Oplog: l}}, echoInput(replayCalls), replayCalls)
	entries, _ := l.Len()
	if want := fixed + durableCallEntries*replayCalls; entries != want {
		b.Fatalf("the recording holds %d entries, want %d", entries, want)
	}
	if got := s.mem.Calls("echo") - calls; got != replayCalls {
		b.Fatalf("the server saw %d calls while recording %d", got, replayCalls)
	}
	l.Close()
	// The store's two files as a crash leaves them, copied while it is
	// open: bbolt's and its journal (internal/oplog, journal.go), which
	// holds the recording's entries until they are folded into bbolt.
	recorded, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	journal, err := os.ReadFile(path + "-journal")
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}

	b.Run("replay", func(b *testing.B) {
		ds := make([]time.Duration, 0, b.N)
		var open time.Duration
		i := 0
		for b.Loop() {
			b.StopTimer()
			i++
			copyPath := filepath.Join(dir, fmt.Sprintf("copy-%d.db", i))
			if err := os.WriteFile(copyPath, recorded, 0o600); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(copyPath+"-journal", journal, 0o600); err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			st, err := oplog.Open(oplog.Options{Path: copyPath})
			if err != nil {
				b.Fatal(err)
			}
			l, err := st.Open(key, oplog.Header{Component: p.Content()})
			if err != nil {
				b.Fatal(err)
			}
			open += time.Since(t0)
			if got := len(l.Recorded()); got != entries {
				b.Fatalf("the copy holds %d entries, the recording %d", got, entries)
			}
			replayed := -1
			cfg := AgentConfig{Name: "bench", Durable: Durability{Oplog: l, OnReplayed: func(n int, _ time.Duration) { replayed = n }}}
			calls := s.mem.Calls("echo")
			b.StartTimer()
			start := time.Now()
			runBenchAgent(b, s, p, cfg, echoInput(replayCalls), replayCalls)
			ds = append(ds, time.Since(start))
			b.StopTimer()
			if got := s.mem.Calls("echo") - calls; got != 0 {
				b.Fatalf("the server saw %d calls during the replay: they were not replayed", got)
			}
			if replayed != entries {
				b.Fatalf("the replay ended after %d entries of %d", replayed, entries)
			}
			if n, _ := l.Len(); n != entries {
				b.Fatalf("the oplog holds %d entries after the replay, %d before: a call was live", n, entries)
			}
			l.Close()
			if err := st.Close(); err != nil {
				b.Fatal(err)
			}
			os.Remove(copyPath)
			os.Remove(copyPath + "-journal")
			b.StartTimer()
		}
		ms := p50(ds) / 1e6
		b.ReportMetric(ms, "ms/replay")
		b.ReportMetric(float64(entries)/(ms/1e3), "entries/s")
		b.ReportMetric(float64(open)/1e6/float64(b.N), "open-ms")
		b.ReportMetric(float64(len(recorded)), "file-B")
	})
	b.Run("live", func(b *testing.B) {
		for b.Loop() {
			runBenchAgent(b, s, p, AgentConfig{Name: "bench"}, echoInput(replayCalls), replayCalls)
		}
	})
}
