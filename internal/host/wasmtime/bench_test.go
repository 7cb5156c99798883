package wasmtime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
		for i := 0; b.Loop(); i++ {
			v, err := rb.callU32(uint32(i))
			if err != nil || v != uint32(i) {
				b.Fatalf("call = %d, %v", v, err)
			}
		}
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
		for i := 0; b.Loop(); i++ {
			v, err := f.Call(U32(i))
			if err != nil || v.(U32) != U32(i) {
				b.Fatalf("call = %v, %v", v, err)
			}
		}
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
		for b.Loop() {
			v, err := rb.callString(in)
			if err != nil || len(v) != len(in) {
				b.Fatalf("call = %d bytes, %v", len(v), err)
			}
		}
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
		for b.Loop() {
			v, err := f.Call(String(in))
			if err != nil || len(v.(String)) != len(in) {
				b.Fatalf("call = %v, %v", v, err)
			}
		}
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
