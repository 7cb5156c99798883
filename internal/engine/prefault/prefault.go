// Package prefault makes the pages that a program's instances write while
// they start present and writable before they run.
//
// wasmtime maps a compiled component's memory image privately from its
// .cwasm file, one mapping per instance. A guest that reads a page of that
// image and then writes it takes two faults: the read maps the file's page
// (and, by the kernel's fault-around, its neighbours) read-only, and the
// write copies it and flushes the page from every CPU the process runs on, a
// cross-CPU TLB shootdown. On a VM the shootdown is the larger cost: for a
// componentize-qjs agent it was about a fifth of the daemon's CPU while
// thousands started. The first instance of a file to become idle teaches the
// set of pages it wrote (Mapping.Learn); each later instance gets those pages
// copied in one madvise(MADV_POPULATE_WRITE) per run of pages before its
// guest runs (Image.Instantiate), which takes no shootdown, and no more
// memory than the guest would have made private itself.
//
// The C API gives no access to a component's core memories, so an
// instance's mapping is found in /proc/self/maps: instantiations run one at
// a time, and the mapping one made is the mapping of the file that is
// writable, private, not yet claimed and has no page present yet.
// Everything here is an optimisation: when a mapping is not found, the
// kernel lacks MADV_POPULATE_WRITE (before Linux 5.14) or /proc is not
// there, instances start as they would without it. Populating never changes
// a page's contents.
package prefault

import (
	"os"
	"path/filepath"
	"sync"
	"time"
)

// registry is every file with Images, process-wide: the address space and
// /proc/self/maps are the process's, whichever Host maps a file.
var registry = struct {
	mu    sync.Mutex
	files map[string]*file
}{files: map[string]*file{}}

// file is one mapped file's state.
type file struct {
	path   string              // as /proc/self/maps prints it
	suffix []byte              // " " + path: a line's end when it maps the file
	refs   int                 // open Images and live Mappings
	live   map[uintptr]uintptr // start → size of each claimed mapping
	// noImage is set when a scan found no private writable mapping of the
	// file at all: its instances do not map it (no memory image).
	noImage bool
	// learnt is set once an instance has taught its write set.
	learnt bool
	size   uintptr     // the size of the mapping it was learnt on
	runs   []pageRange // the pages written, by page index in the mapping
	// populated counts the instantiations that got the write set.
	populated int
}

// pageRange is the pages [lo, hi) of a mapping.
type pageRange struct{ lo, hi uintptr }

// Image is a handle on the instances of one compiled file.
type Image struct {
	f      *file
	closed bool
}

// Open returns an Image for the file at path. Close it when the program
// that maps the file is released.
func Open(path string) (*Image, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, err
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	f := registry.files[abs]
	if f == nil {
		f = &file{path: abs, suffix: []byte(" " + abs), live: map[uintptr]uintptr{}}
		registry.files[abs] = f
	}
	f.refs++
	return &Image{f: f}, nil
}

// Close releases the Image; its Mappings stay valid. Idempotent.
func (im *Image) Close() {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if im.closed {
		return
	}
	im.closed = true
	im.f.unrefLocked()
}

func (f *file) unrefLocked() {
	f.refs--
	if f.refs == 0 {
		delete(registry.files, f.path)
	}
}

// Stats is what an Image's file has learnt and done: the pages of its
// write set (0 until one is learnt) and how many instantiations got them.
func (im *Image) Stats() (pages, populated int) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	for _, r := range im.f.runs {
		pages += int(r.hi - r.lo)
	}
	return pages, im.f.populated
}

// Instantiate calls create, which makes one instance mapping the file, and
// returns that mapping, with the learnt write set already made present and
// writable. The mapping is nil when create failed or made none that could
// be found. Instantiations of every Image run one at a time; one that waits
// longer than gateWait for its turn (another's create is slow: a guest's
// start function runs in it) runs create at once and gets no mapping.
func (im *Image) Instantiate(create func() error) (*Mapping, error) {
	if !enter() {
		return nil, create()
	}
	m, runs, err := im.createAndClaim(create)
	if m != nil {
		populate(m.start, runs)
	}
	return m, err
}

// createAndClaim runs create and claims the mapping it made, holding the
// gate (taken by enter) and releasing it however create ends. runs is the
// write set to populate, if one is learnt.
func (im *Image) createAndClaim(create func() error) (*Mapping, []pageRange, error) {
	defer func() { <-gate }()
	if err := create(); err != nil {
		return nil, nil, err
	}
	f := im.f
	registry.mu.Lock()
	defer registry.mu.Unlock()
	start, size, ok := findNew(f)
	if !ok {
		return nil, nil, nil
	}
	f.live[start] = size
	f.refs++
	var runs []pageRange
	if f.learnt && f.size == size && len(f.runs) > 0 {
		runs = f.runs
		f.populated++
	}
	return &Mapping{f: f, start: start, size: size}, runs, nil
}

// gate is held by the instantiation whose mapping is being found: the
// mapping an instantiation makes is the only new one while it holds it.
var gate = make(chan struct{}, 1)

// gateWait bounds the wait for the gate. An instantiation takes a few
// milliseconds at most (the "agent started" line's instantiate: 1.8 ms for
// a componentize-qjs agent, 3.9 ms for a componentize-js one, first starts
// on a busy machine), so a longer wait is a guest's start function running.
const gateWait = 50 * time.Millisecond

// enter takes the gate, or gives up after gateWait.
func enter() bool {
	select {
	case gate <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(gateWait)
	defer t.Stop()
	select {
	case gate <- struct{}{}:
		return true
	case <-t.C:
		return false
	}
}

// Mapping is one instance's mapping of the file.
type Mapping struct {
	f      *file
	start  uintptr
	size   uintptr
	closed bool
}

// Learn records the pages this mapping has made private (written) as the
// file's write set, unless one is learnt already. Call it once the instance
// has started: at its first wait for input. It returns the pages learnt
// (0 when another mapping taught the set, or m is nil).
func (m *Mapping) Learn() (int, error) {
	if m == nil {
		return 0, nil
	}
	registry.mu.Lock()
	learnt := m.f.learnt
	registry.mu.Unlock()
	if learnt {
		return 0, nil
	}
	runs, err := written(m.start, m.size)
	if err != nil {
		return 0, err
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if m.f.learnt {
		return 0, nil
	}
	m.f.learnt, m.f.size, m.f.runs = true, m.size, runs
	n := 0
	for _, r := range runs {
		n += int(r.hi - r.lo)
	}
	return n, nil
}

// Close forgets the mapping; call it after the instance's store is closed
// (its memory unmapped). Idempotent; m may be nil.
func (m *Mapping) Close() {
	if m == nil {
		return
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if m.closed {
		return
	}
	m.closed = true
	if m.f.live[m.start] == m.size {
		delete(m.f.live, m.start)
	}
	m.f.unrefLocked()
}

// pageSize is the host's page size.
var pageSize = uintptr(os.Getpagesize())
