package wasmtime

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentStores runs 64 stores on 64 goroutines sharing one engine,
// component and linker, each calling concurrently and checking that every
// host call saw its own store's data.
func TestConcurrentStores(t *testing.T) {
	const goroutines, calls = 64, 200
	e := mustEngine(t, EngineConfig{})
	c := mustComponent(t, e, echoWAT(prim("string")))
	l := mustLinker(t, e)
	l.Root().AddFunc("echo", func(caller *Caller, args, results []Val) error {
		results[0] = String(caller.Data().(string) + "|" + string(args[0].(String)))
		return nil
	})
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := "agent-" + strconv.Itoa(g)
			s, err := NewStore(e, StoreConfig{Data: id})
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			inst, err := l.Instantiate(s, c)
			if err != nil {
				errs <- err
				return
			}
			f, err := inst.Func("run")
			if err != nil {
				errs <- err
				return
			}
			for i := range calls {
				in := fmt.Sprintf("%d-%d", g, i)
				v, err := f.Call(String(in))
				if err != nil {
					errs <- err
					return
				}
				if want := String(id + "|" + in); v != want {
					errs <- fmt.Errorf("got %v, want %v", v, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func rssBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	fields := strings.Fields(string(b))
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// TestNoLeaks makes 100k calls moving nested values (strings, lists,
// records, options, results) both ways and checks that RSS stays flat after
// a warm-up, and that closing everything releases every callback handle.
func TestNoLeaks(t *testing.T) {
	if testing.Short() {
		t.Skip("100k calls")
	}
	handlesBefore := handles.live.Load()
	e, err := NewEngine(EngineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	entry := recordOf("entry",
		tyField{"name", prim("string")},
		tyField{"value", optionOf(resultOf(prim("u32"), prim("string")))})
	c, err := NewComponent(e, []byte(echoWAT(listOf(entry))))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := NewLinker(e)
	l.Root().AddFunc("echo", func(_ *Caller, args, results []Val) error {
		results[0] = args[0]
		return nil
	})
	var out bytes.Buffer
	s, err := NewStore(e, StoreConfig{WASI: &WASIConfig{Stdout: &out, Stderr: &out}})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := l.Instantiate(s, c)
	if err != nil {
		t.Fatal(err)
	}
	f, err := inst.Func("run")
	if err != nil {
		t.Fatal(err)
	}
	arg := List{
		Record{{"name", String(strings.Repeat("n", 100))}, {"value", Some(Ok(U32(1)))}},
		Record{{"name", String("ü")}, {"value", Some(Err(String(strings.Repeat("e", 200))))}},
		Record{{"name", String("")}, {"value", None}},
	}
	run := func(n int) {
		for range n {
			v, err := f.Call(arg)
			if err != nil {
				t.Fatal(err)
			}
			if len(v.(List)) != 3 {
				t.Fatalf("got %v", v)
			}
		}
	}
	settle := func() int64 {
		runtime.GC()
		debug.FreeOSMemory()
		return rssBytes(t)
	}
	run(10_000)
	before := settle()
	run(100_000)
	after := settle()
	t.Logf("RSS after warm-up %d KiB, after 100k calls %d KiB", before>>10, after>>10)
	if growth := after - before; growth > 8<<20 {
		t.Errorf("RSS grew by %d KiB over 100k calls", growth>>10)
	}

	for _, cl := range []interface{ Close() error }{s, l, c, e} {
		cl.Close()
	}
	if live := handles.live.Load(); live != handlesBefore {
		t.Errorf("%d callback handles still registered after closing everything (was %d)", live, handlesBefore)
	}
}
