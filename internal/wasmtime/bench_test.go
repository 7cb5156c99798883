package wasmtime

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// latencies keeps a uniform sample (reservoir sampling with a fixed seed)
// of the per-call latencies of a benchmark loop and reports their
// percentiles as p50-ns and p99-ns.
type latencies struct {
	samples [1 << 14]time.Duration
	n       int
	rng     rand.PCG
}

func (l *latencies) add(d time.Duration) {
	if l.n < len(l.samples) {
		l.samples[l.n] = d
	} else if j := l.rng.Uint64() % uint64(l.n+1); j < uint64(len(l.samples)) {
		l.samples[j] = d
	}
	l.n++
}

func (l *latencies) report(b *testing.B) {
	s := slices.Clone(l.samples[:min(l.n, len(l.samples))])
	if len(s) == 0 {
		return
	}
	slices.Sort(s)
	b.ReportMetric(float64(s[len(s)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(s[len(s)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkHostCallU32 measures one guest call that makes one host call,
// u32 in and out: baseline is the loop written on the raw C API
// (baseline.go), binding the same through Func.Call and a HostFunc.
func BenchmarkHostCallU32(b *testing.B) {
	e := mustEngine(b, EngineConfig{})
	c := mustComponent(b, e, echoWAT(prim("u32")))
	b.Run("baseline", func(b *testing.B) {
		rb, err := newRawBench(e, c, rawEchoU32)
		if err != nil {
			b.Fatal(err)
		}
		defer rb.close()
		b.ReportAllocs()
		lat := new(latencies)
		for i := 0; b.Loop(); i++ {
			t0 := time.Now()
			v, err := rb.callU32(uint32(i))
			lat.add(time.Since(t0))
			if err != nil || v != uint32(i) {
				b.Fatalf("call = %d, %v", v, err)
			}
		}
		lat.report(b)
	})
	b.Run("binding", func(b *testing.B) {
		l := mustLinker(b, e)
		l.Root().AddFunc("echo", func(_ *Caller, args, results []Val) error {
			results[0] = args[0]
			return nil
		})
		s := mustStore(b, e, StoreConfig{})
		f := mustFunc(b, l, s, c, "run")
		b.ReportAllocs()
		lat := new(latencies)
		for i := 0; b.Loop(); i++ {
			t0 := time.Now()
			v, err := f.Call(U32(i))
			lat.add(time.Since(t0))
			if err != nil || v.(U32) != U32(i) {
				b.Fatalf("call = %v, %v", v, err)
			}
		}
		lat.report(b)
	})
}

// BenchmarkHostCallString1K is BenchmarkHostCallU32 with a 1 KiB string.
func BenchmarkHostCallString1K(b *testing.B) {
	e := mustEngine(b, EngineConfig{})
	c := mustComponent(b, e, echoWAT(prim("string")))
	in := strings.Repeat("0123456789abcdef", 64)
	b.Run("baseline", func(b *testing.B) {
		rb, err := newRawBench(e, c, rawEchoString)
		if err != nil {
			b.Fatal(err)
		}
		defer rb.close()
		b.ReportAllocs()
		b.SetBytes(int64(len(in)))
		lat := new(latencies)
		for b.Loop() {
			t0 := time.Now()
			v, err := rb.callString(in)
			lat.add(time.Since(t0))
			if err != nil || len(v) != len(in) {
				b.Fatalf("call = %d bytes, %v", len(v), err)
			}
		}
		lat.report(b)
	})
	b.Run("binding", func(b *testing.B) {
		l := mustLinker(b, e)
		l.Root().AddFunc("echo", func(_ *Caller, args, results []Val) error {
			results[0] = args[0]
			return nil
		})
		s := mustStore(b, e, StoreConfig{})
		f := mustFunc(b, l, s, c, "run")
		b.ReportAllocs()
		b.SetBytes(int64(len(in)))
		lat := new(latencies)
		for b.Loop() {
			t0 := time.Now()
			v, err := f.Call(String(in))
			lat.add(time.Since(t0))
			if err != nil || len(v.(String)) != len(in) {
				b.Fatalf("call = %v, %v", v, err)
			}
		}
		lat.report(b)
	})
}

// BenchmarkInstantiate measures a warm instantiation: new store, instance,
// function lookup, close.
func BenchmarkInstantiate(b *testing.B) {
	e := mustEngine(b, EngineConfig{})
	c := mustComponent(b, e, echoWAT(listOf(recordOf("entry",
		tyField{"name", prim("string")},
		tyField{"value", optionOf(resultOf(prim("u32"), prim("string")))}))))
	l := mustLinker(b, e)
	l.Root().AddFunc("echo", func(_ *Caller, args, results []Val) error {
		results[0] = args[0]
		return nil
	})
	b.ReportAllocs()
	for b.Loop() {
		s, err := NewStore(e, StoreConfig{})
		if err != nil {
			b.Fatal(err)
		}
		inst, err := l.Instantiate(s, c)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := inst.Func("run"); err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkDeserialize measures loading a serialized component from bytes
// and from a file.
func BenchmarkDeserialize(b *testing.B) {
	e := mustEngine(b, EngineConfig{})
	c := mustComponent(b, e, echoWAT(prim("string")))
	blob, err := c.Serialize()
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "echo.cwasm")
	if err := os.WriteFile(path, blob, 0o600); err != nil {
		b.Fatal(err)
	}
	b.Run("bytes", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			dc, err := DeserializeComponent(e, blob)
			if err != nil {
				b.Fatal(err)
			}
			dc.Close()
		}
	})
	b.Run("file", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			dc, err := DeserializeComponentFile(e, path)
			if err != nil {
				b.Fatal(err)
			}
			dc.Close()
		}
	})
}
