package host

// The host's own wasi:clocks/wall-clock and wasi:random interfaces, in
// place of wasmtime's (AddWASIP2): defined at the very version a
// component imports, they are what it links to, and their calls go
// through the journal like the host's other imports, so that a durable
// instance's replay gives the guest the times and random values it had.
// wasi:clocks/monotonic-clock stays wasmtime's: its subscribe functions
// return wasi:io pollables, which only wasmtime's implementation can make
// (docs/durable.md says what that leaves out).

import (
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// maxRandomBytes bounds one get-random-bytes (wasmtime's own bound is
// the guest's memory; a request past this is a guest defect).
const maxRandomBytes = 64 << 20

// capturedWASI are the interfaces the host defines itself, by name
// without version, with their functions.
var capturedWASI = map[string]map[string]wt.HostFunc{
	"wasi:clocks/wall-clock": {
		"now": func(_ *wt.Caller, _ []wt.Val, results []wt.Val) error {
			results[0] = datetime(time.Now())
			return nil
		},
		"resolution": func(_ *wt.Caller, _ []wt.Val, results []wt.Val) error {
			results[0] = wt.Record{{Name: "seconds", Val: wt.U64(0)}, {Name: "nanoseconds", Val: wt.U32(1)}}
			return nil
		},
	},
	"wasi:random/random": {
		"get-random-bytes": randomBytes(func(b []byte) { _, _ = crand.Read(b) }),
		"get-random-u64": func(_ *wt.Caller, _ []wt.Val, results []wt.Val) error {
			var b [8]byte
			_, _ = crand.Read(b[:])
			results[0] = wt.U64(binary.LittleEndian.Uint64(b[:]))
			return nil
		},
	},
	"wasi:random/insecure": {
		"get-insecure-random-bytes": randomBytes(func(b []byte) {
			for i := range b {
				b[i] = byte(rand.Uint32())
			}
		}),
		"get-insecure-random-u64": func(_ *wt.Caller, _ []wt.Val, results []wt.Val) error {
			results[0] = wt.U64(rand.Uint64())
			return nil
		},
	},
	"wasi:random/insecure-seed": {
		"insecure-seed": func(_ *wt.Caller, _ []wt.Val, results []wt.Val) error {
			results[0] = wt.Tuple{wt.U64(rand.Uint64()), wt.U64(rand.Uint64())}
			return nil
		},
	},
}

func datetime(t time.Time) wt.Record {
	return wt.Record{{Name: "seconds", Val: wt.U64(t.Unix())}, {Name: "nanoseconds", Val: wt.U32(t.Nanosecond())}}
}

// randomBytes is a get-random-bytes(len: u64) filled by fill.
func randomBytes(fill func([]byte)) wt.HostFunc {
	return func(_ *wt.Caller, args []wt.Val, results []wt.Val) error {
		n, ok := args[0].(wt.U64)
		if len(args) != 1 || !ok {
			return fmt.Errorf("%w: random bytes take a u64 length", errBadArgs)
		}
		if n > maxRandomBytes {
			return fmt.Errorf("%d random bytes asked at once (at most %d)", n, maxRandomBytes)
		}
		b := make([]byte, n)
		fill(b)
		results[0] = wt.Bytes(b)
		return nil
	}
}

// defineCapturedWASI defines, at the versions c imports them, the
// interfaces of capturedWASI whose every function the host implements
// (a later version with a function it does not know stays wasmtime's).
func defineCapturedWASI(l *wt.Linker, c *wt.Component) error {
	imports, err := c.Imports()
	if err != nil {
		return err
	}
	for _, it := range imports {
		name, _, _ := strings.Cut(it.Name, "@")
		funcs, ok := capturedWASI[name]
		if !ok || it.Kind != wt.ItemInstance || !implementsAll(funcs, it.Exports) {
			continue
		}
		li, err := l.Root().Instance(it.Name)
		if err != nil {
			return err
		}
		if err := addFuncs(li, funcs); err != nil {
			return fmt.Errorf("define %s: %w", it.Name, err)
		}
	}
	return nil
}

func implementsAll(funcs map[string]wt.HostFunc, exports []wt.Item) bool {
	for _, ex := range exports {
		if _, ok := funcs[ex.Name]; !ok && ex.Kind == wt.ItemFunc {
			return false
		}
	}
	return true
}
