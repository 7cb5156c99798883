package wasmtime

import (
	"strings"
	"testing"
	"time"
)

// TestBytes: Bytes is lowered as a list<u8> (the fast path for byte
// lists): passed to the guest as a Call's argument and returned to it from
// a host function, it arrives as the List of U8 of the same bytes; empty
// and 1 MiB included. Passed where another list is expected, it is a type
// mismatch, refused before the call.
func TestBytes(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	c := mustComponent(t, e, echoWAT(listOf(prim("u8"))))
	l := mustLinker(t, e)
	var got Val
	var reply Bytes
	if err := l.Root().AddFunc("echo", func(_ *Caller, args, results []Val) error {
		got = args[0]
		results[0] = reply
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s := mustStore(t, e, StoreConfig{})
	f := mustFunc(t, l, s, c, "run")
	big := make(Bytes, 1<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	asList := func(b Bytes) List {
		out := make(List, len(b))
		for i, c := range b {
			out[i] = U8(c)
		}
		return out
	}
	for _, b := range []Bytes{{}, {0, 1, 0xff}, big} {
		reply = append(Bytes{0x42}, b...)
		out, err := f.Call(b)
		if err != nil {
			t.Fatalf("%d bytes: %v", len(b), err)
		}
		if !valEqual(got, asList(b)) {
			t.Errorf("%d bytes: the guest passed on %s", len(b), short(got))
		}
		if !valEqual(out, asList(reply)) {
			t.Errorf("%d bytes: the host's Bytes came back as %s", len(b), short(out))
		}
	}

	c32 := mustComponent(t, e, echoWAT(listOf(prim("u32"))))
	l32 := mustLinker(t, e)
	if err := l32.Root().AddFunc("echo", func(_ *Caller, args, results []Val) error { results[0] = args[0]; return nil }); err != nil {
		t.Fatal(err)
	}
	f32 := mustFunc(t, l32, mustStore(t, e, StoreConfig{}), c32, "run")
	if _, err := f32.Call(Bytes{1}); err == nil || !strings.Contains(err.Error(), "type mismatch") {
		t.Errorf("Bytes for a list<u32>: %v", err)
	}
	if out, err := f32.Call(List{U32(7)}); err != nil || !valEqual(out, List{U32(7)}) {
		t.Errorf("the instance after the refused call: %v, %v", out, err)
	}
}

// BenchmarkBytesResult: a host function returns 4 KiB as list<u8> to the
// guest (what a key-value get does): baseline is a List of U8, converted
// element by element; bytes is Bytes, lowered in one pass.
func BenchmarkBytesResult(b *testing.B) {
	e := mustEngine(b, EngineConfig{})
	c := mustComponent(b, e, echoWAT(listOf(prim("u8"))))
	data := make(Bytes, 4<<10)
	for _, v := range []struct {
		name  string
		reply func() Val
	}{
		{"baseline", func() Val {
			l := make(List, len(data))
			for i, c := range data {
				l[i] = U8(c)
			}
			return l
		}},
		{"bytes", func() Val { return data }},
	} {
		b.Run(v.name, func(b *testing.B) {
			l := mustLinker(b, e)
			if err := l.Root().AddFunc("echo", func(_ *Caller, _, results []Val) error {
				results[0] = v.reply()
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			f := mustFunc(b, l, mustStore(b, e, StoreConfig{}), c, "run")
			lat := new(latencies)
			for b.Loop() {
				t0 := time.Now()
				if _, err := f.Call(Bytes{}); err != nil {
					b.Fatal(err)
				}
				lat.add(time.Since(t0))
			}
			lat.report(b)
		})
	}
}

// BenchmarkBytesArg: a guest passes a list<u8> to a host function (what
// a key-value set does), which lifts it; baseline passes none (the call's
// own cost), 4KiB passes 4 KiB.
func BenchmarkBytesArg(b *testing.B) {
	e := mustEngine(b, EngineConfig{})
	c := mustComponent(b, e, echoWAT(listOf(prim("u8"))))
	for _, v := range []struct {
		name string
		arg  Bytes
	}{
		{"baseline", Bytes{}},
		{"4KiB", make(Bytes, 4<<10)},
	} {
		b.Run(v.name, func(b *testing.B) {
			l := mustLinker(b, e)
			if err := l.Root().AddFunc("echo", func(_ *Caller, _, results []Val) error {
				results[0] = Bytes{}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			f := mustFunc(b, l, mustStore(b, e, StoreConfig{}), c, "run")
			lat := new(latencies)
			for b.Loop() {
				t0 := time.Now()
				if _, err := f.Call(v.arg); err != nil {
					b.Fatal(err)
				}
				lat.add(time.Since(t0))
			}
			lat.report(b)
		})
	}
}
