package toolhost

import (
	"context"
	"errors"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The edges of issue 19 that need no host: they are decided before any
// host call (every host call panics natively, so reaching one fails the
// test).

func TestClosedHandles(t *testing.T) {
	tl := &Tooling{x: handle{h: 3, closed: true}}
	pr := &Provider{x: handle{h: 4, closed: true}}
	if tl.Kind() != "" || tl.Name() != "" || tl.IsOpen("id") || tl.Cancel("id") ||
		tl.UnsubscribeResource("id") || tl.UnsubscribeResourceList("id") {
		t.Error("a closed tooling's non-error methods did not return their zero values")
	}
	if pr.Kind() != "" || pr.Name() != "" || pr.IsOpen("id") || pr.Cancel("id") {
		t.Error("a closed provider's non-error methods did not return their zero values")
	}
	if err := tl.Close(); err != nil {
		t.Errorf("a second Tooling.Close: %v", err)
	}
	if err := pr.Close(); err != nil {
		t.Errorf("a second Provider.Close: %v", err)
	}
	for name, f := range map[string]func() error{
		"ListTools":              func() error { _, err := tl.ListTools(); return err },
		"CallTool":               func() error { _, err := tl.CallTool("echo", nil); return err },
		"CallToolBlocking":       func() error { _, err := tl.CallToolBlocking("echo", nil); return err },
		"ListResources":          func() error { _, err := tl.ListResources(); return err },
		"ReadResource":           func() error { _, err := tl.ReadResource("test://x"); return err },
		"SubscribeResourceList":  func() error { _, err := tl.SubscribeResourceList(); return err },
		"SubscribeResource":      func() error { _, err := tl.SubscribeResource("test://x"); return err },
		"Chat":                   func() error { _, err := pr.Chat(&ChatRequest{}); return err },
		"ChatStream":             func() error { _, err := pr.ChatStream(&ChatRequest{}); return err },
		"Tooling.Close (again)":  func() error { return errors.Join(tl.Close(), errors.New("nil")) },
		"Provider.Close (again)": func() error { return errors.Join(pr.Close(), errors.New("nil")) },
	} {
		err := f()
		if strings.HasSuffix(name, "(again)") {
			if err.Error() != "nil" {
				t.Errorf("%s returned %v, want nil", name, err)
			}
			continue
		}
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

func TestInvalidUTF8(t *testing.T) {
	bad := "x\xc3"
	open := &Tooling{x: handle{h: 1}}
	prov := &Provider{x: handle{h: 2}}
	for name, f := range map[string]func() error{
		"Get":                       func() error { _, err := Get(bad); return err },
		"GetProvider":               func() error { _, err := GetProvider(bad); return err },
		"CallTool name":             func() error { _, err := open.CallTool(bad, nil); return err },
		"CallTool JSON text":        func() error { _, err := open.CallTool("echo", `{"a":"`+bad+`"}`); return err },
		"CallTool []byte":           func() error { _, err := open.CallTool("echo", []byte(bad)); return err },
		"CallToolBlocking name":     func() error { _, err := open.CallToolBlocking(bad, nil); return err },
		"CallToolBlocking raw JSON": func() error { _, err := open.CallToolBlocking("echo", `"`+bad+`"`); return err },
		"ReadResource":              func() error { _, err := open.ReadResource("test://" + bad); return err },
		"SubscribeResource":         func() error { _, err := open.SubscribeResource(bad); return err },
		"Chat":                      func() error { _, err := prov.Chat(&ChatRequest{Messages: []Message{UserMessage(bad)}}); return err },
		"ChatStream":                func() error { _, err := prov.ChatStream(&ChatRequest{Stop: []string{bad}}); return err },
	} {
		var he *HostError
		if err := f(); !errors.As(err, &he) || he.Code != InvalidArgument || !strings.Contains(he.Message, "not valid UTF-8") {
			t.Errorf("%s: %v, want invalid-argument", name, err)
		}
	}
	// An id that is not valid UTF-8 was never given out: false.
	if open.IsOpen(bad) || open.Cancel(bad) || open.UnsubscribeResource(bad) || open.UnsubscribeResourceList(bad) ||
		prov.IsOpen(bad) || prov.Cancel(bad) {
		t.Error("an invalid id was reported open")
	}
	// Marshalled arguments are valid UTF-8 (encoding/json replaces
	// invalid bytes), so a map with them is not refused here.
	if a, err := argumentsJSON("t", map[string]string{"k": bad}); err != nil || checkUTF8("", a) != nil {
		t.Errorf("marshalled %q, %v", a, err)
	}

	if got := sanitize("a\xffb\xc3"); got != "a\uFFFDb\uFFFD" {
		t.Errorf("sanitize = %q", got)
	}
	if got := sanitize("fine é"); got != "fine é" {
		t.Errorf("sanitize changed valid text: %q", got)
	}
}

func TestRunOutput(t *testing.T) {
	defer func(h func(string) (string, error)) { handler = h }(handler)
	for _, tc := range []struct {
		out    string
		err    error
		want   string
		failed bool
	}{
		{"ok é", nil, "ok é", false},
		{"bad \xff", nil, "invalid-argument: toolhost: run's output is not valid UTF-8", true},
		{"", errors.New("broken \xfe"), "broken \uFFFD", true},
	} {
		handler = func(string) (string, error) { return tc.out, tc.err }
		if got, failed := runHandler("in"); got != tc.want || failed != tc.failed {
			t.Errorf("run returning (%q, %v) gave (%q, %v), want (%q, %v)", tc.out, tc.err, got, failed, tc.want, tc.failed)
		}
	}
}

func TestRecvArgs(t *testing.T) {
	for _, tc := range []struct {
		d        time.Duration
		some, ms uint32
	}{
		{Forever, 0, 0},
		{-1, 1, 0}, // what time.Until gives a deadline that just passed
		{-time.Hour, 1, 0},
		{math.MinInt64, 1, 0},
		{0, 1, 0},
		{time.Nanosecond, 1, 1},
		{250 * time.Millisecond, 1, 250},
		{Forever - 1, 1, math.MaxUint32},
	} {
		if some, ms := recvArgs(tc.d); some != tc.some || ms != tc.ms {
			t.Errorf("recvArgs(%v) = (%d, %d), want (%d, %d)", tc.d, some, ms, tc.some, tc.ms)
		}
	}
	// Done contexts return before any host call.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RecvContext(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("RecvContext of a cancelled context: %v", err)
	}
	ctx, cancel = context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := RecvContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("RecvContext past its deadline: %v", err)
	}
}

// withRegions runs f with the allocator's state set to an arena and a
// reserve of the given sizes, a sink that records its blocks, and restores
// it after.
func withRegions(t *testing.T, arenaSize, reserveSize uint32, sinkOK bool, f func(sunk *[]uint32)) {
	t.Helper()
	saved := []any{arena, reserve, reserveFloor, inImport, overflowed, need, sinkBlock}
	defer func() {
		arena, reserve, reserveFloor = saved[0].(region), saved[1].(region), saved[2].(uint32)
		inImport, overflowed, need = saved[3].(bool), saved[4].(bool), saved[5].(uint64)
		sinkBlock = saved[6].(func(uint32) uint32)
	}()
	arena = region{base: 1000, size: arenaSize}
	reserve = region{base: 100000, size: reserveSize}
	reserveFloor = 0
	var sunk []uint32
	sinkBlock = func(size uint32) uint32 {
		if !sinkOK {
			return 0
		}
		sunk = append(sunk, size)
		return 1 << 30
	}
	f(&sunk)
}

func TestAllocateOverflow(t *testing.T) {
	withRegions(t, 64, 100, true, func(sunk *[]uint32) {
		// Outside a call: the arena, then the reserve below its floor.
		if p := allocate(8, 60); p != 1000 {
			t.Fatalf("arena block at %d", p)
		}
		if p := allocate(4, 16); p != 100000 || reserveFloor != 16 {
			t.Fatalf("permanent block at %d, floor %d", p, reserveFloor)
		}

		// A call whose blocks fit.
		beginImport()
		a, b := allocate(1, 5), allocate(4, 20)
		if a != 100016 || b != 100024 {
			t.Fatalf("blocks at %d %d", a, b)
		}
		if err := endImport(); err != nil {
			t.Fatalf("a fitting result: %v", err)
		}
		if !inReserve(a, 5) || inReserve(1<<30, 1) || inReserve(100090, 20) {
			t.Error("inReserve")
		}
		safePoint()
		if reserve.used != 16 {
			t.Fatalf("after the call %d bytes are taken, want the floor's 16", reserve.used)
		}

		// A call that overflows: 3 + (pad to 4) 60 fit; 30 does not, nor
		// anything after it, even what would fit.
		beginImport()
		allocate(1, 3)
		allocate(4, 60)
		if p := allocate(4, 30); p != 1<<30 {
			t.Fatalf("the overflowing block went to %d, not the sink", p)
		}
		if p := allocate(1, 1); p != 1<<30 {
			t.Fatalf("a block after the overflow went to %d", p)
		}
		err := endImport()
		if err == nil || err.Size != 3+1+60+30+1 || err.Reserved != 84 {
			t.Fatalf("overflow error %+v, want size 95 reserved 84", err)
		}
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "95 bytes") {
			t.Errorf("error %q", err)
		}
		safePoint()
		if reserve.size != 100 {
			t.Errorf("the reserve changed after an overflow: %d bytes", reserve.size)
		}
		if len(*sunk) != 2 || (*sunk)[0] != 30 {
			t.Errorf("sink asked for %v", *sunk)
		}
		// The next call starts afresh.
		beginImport()
		if p := allocate(1, 2); p == 1<<30 || endImport() != nil {
			t.Error("the call after an overflow overflowed")
		}
	})
	// Without a sink (memory cannot grow), or outside a call, a block that
	// fits nowhere is the trapping address.
	withRegions(t, 8, 8, false, func(*[]uint32) {
		if allocate(1, 9) != badAddress {
			t.Error("a permanent block too large for both regions")
		}
		beginImport()
		if allocate(1, 9) != badAddress {
			t.Error("no sink: not the trapping address")
		}
		endImport()
	})
}

func TestReserveGrows(t *testing.T) {
	withRegions(t, 8, 64, true, func(*[]uint32) {
		Reserve(10)
		if reserve.size != 64 {
			t.Errorf("Reserve(10) replaced a 64-byte reserve: %d", reserve.size)
		}
		Reserve(95)
		if reserve.size != 96 {
			t.Errorf("Reserve(95) gave %d bytes", reserve.size)
		}
		beginImport()
		allocate(1, 60)
		endImport()
		safePoint()
		if reserve.size != 192 {
			t.Errorf("a call using more than half did not double the reserve: %d", reserve.size)
		}
	})
}

func TestTooLargeEnvelope(t *testing.T) {
	withRegions(t, 8, 1<<16, true, func(*[]uint32) {
		m := &fakeMemory{}
		reserve = region{base: 0, size: 1 << 16} // the fake memory is the reserve
		area := m.alloc(wOptEnvelope.size(), 4)
		m.b[area] = 1
		m.str(area+offOptEnvVal+offEnvelopeID, "11111111-2222-3333-4444-555555555555")
		tl := &TooLargeError{Size: 1 << 20, Reserved: 1 << 16}
		env, ok := tooLargeEnvelope(m, area, tl)
		ev, isErr := env.Event.(ErrorEvent)
		if !ok || !isErr || env.ID != "11111111-2222-3333-4444-555555555555" || ev.Err.Code != Internal {
			t.Fatalf("got %v %+v", ok, env)
		}
		var got *TooLargeError
		if !errors.As(ev.Err, &got) || got != tl || !errors.Is(ev.Err, ErrTooLarge) {
			t.Errorf("the event's error %v does not unwrap to the TooLargeError", ev.Err)
		}
		// An id outside the reserve (in the sink) is not read.
		m.put32(area+offOptEnvVal+offEnvelopeID, 1<<20)
		if env, _ := tooLargeEnvelope(m, area, tl); env.ID != "" {
			t.Errorf("an id in the sink was read: %q", env.ID)
		}
		m.b[area] = 0
		if _, ok := tooLargeEnvelope(m, area, tl); ok {
			t.Error("none became an envelope")
		}
	})
}

// TestDocOnEveryPlatform: go doc shows the package as this GOOS builds
// it, so no exported name may be declared in a file with a build
// constraint (its doc would differ, or be missing, on other platforms).
func TestDocOnEveryPlatform(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		constrained := strings.Contains(strings.TrimSuffix(name, ".go"), "_wasip1")
		for _, c := range f.Comments {
			for _, l := range c.List {
				if constraint.IsGoBuild(l.Text) {
					constrained = true
				}
			}
		}
		if !constrained {
			continue
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() {
					t.Errorf("%s declares %s", name, d.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								t.Errorf("%s declares %s", name, n)
							}
						}
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							t.Errorf("%s declares %s", name, s.Name)
						}
					}
				}
			}
		}
	}
}
