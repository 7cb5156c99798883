package prefault

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

const testPages = 16

// imageFile writes a file of testPages pages, page i filled with byte i+1.
func imageFile(t *testing.T) string {
	t.Helper()
	ps := int(pageSize)
	b := make([]byte, testPages*ps)
	for i := range testPages {
		copy(b[i*ps:], bytes.Repeat([]byte{byte(i + 1)}, ps))
	}
	path := filepath.Join(t.TempDir(), "image.cwasm")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// openImage writes an image file and opens an Image on it, closed at the
// end of the test.
func openImage(t *testing.T) (string, *Image) {
	t.Helper()
	path := imageFile(t)
	im, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(im.Close)
	return path, im
}

// mapPrivate maps path privately and writably, as wasmtime maps a memory
// image; the mapping is unmapped at the end of the test.
func mapPrivate(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, testPages*int(pageSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(m) })
	return m
}

// state is, per page of m, "-" not present, "r" present from the file,
// "w" present and private.
func state(t *testing.T, m []byte) string {
	t.Helper()
	b, err := pagemap(nil, addr(m), uintptr(len(m)))
	if err != nil {
		t.Fatal(err)
	}
	var s []byte
	for i := range len(b) / 8 {
		switch v := entry(b, i); {
		case v&pmPresent == 0:
			s = append(s, '-')
		case v&pmFile != 0:
			s = append(s, 'r')
		default:
			s = append(s, 'w')
		}
	}
	return string(s)
}

func addr(m []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(m))) }

// sink keeps the test's reads of a mapping from being optimised away.
var sink int

// TestLearnAndPopulate: the first mapping, read throughout and written on
// pages 1, 2 and 5, teaches those three pages; the next mapping made under
// Instantiate has exactly them present and private before anything touches
// it, with the file's contents, and the others not present.
func TestLearnAndPopulate(t *testing.T) {
	path, im := openImage(t)
	var first []byte
	m1, err := im.Instantiate(func() error { first = mapPrivate(t, path); return nil })
	if err != nil || m1 == nil {
		t.Fatalf("first Instantiate = %v, %v; want a mapping", m1, err)
	}
	defer m1.Close()
	if got := state(t, first); got != "----------------" {
		t.Fatalf("first mapping before use: %s, want nothing present (nothing learnt yet)", got)
	}
	sum := 0
	for i := range first { // read first, as a guest does
		sum += int(first[i])
	}
	for _, p := range []int{1, 2, 5} {
		first[p*int(pageSize)] = 0xee
	}
	if n, err := m1.Learn(); err != nil || n != 3 {
		t.Fatalf("Learn = %d, %v; want 3 pages", n, err)
	}
	if n, err := m1.Learn(); err != nil || n != 0 {
		t.Fatalf("second Learn = %d, %v; want 0 (learnt already)", n, err)
	}
	if pages, populated := im.Stats(); pages != 3 || populated != 0 {
		t.Fatalf("Stats = %d, %d; want 3 pages, none populated", pages, populated)
	}

	var second []byte
	m2, err := im.Instantiate(func() error { second = mapPrivate(t, path); return nil })
	if err != nil || m2 == nil {
		t.Fatalf("second Instantiate = %v, %v; want a mapping", m2, err)
	}
	defer m2.Close()
	if m2.start != addr(second) {
		t.Fatalf("second Instantiate claimed %#x, want the new mapping at %#x", m2.start, addr(second))
	}
	if _, populated := im.Stats(); populated != 1 {
		t.Fatalf("populated = %d after the second instantiation, want 1", populated)
	}
	if got, want := state(t, second), "-ww--w----------"; got != want {
		t.Fatalf("second mapping before use: %s, want %s", got, want)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(second, want) {
		t.Fatal("populated mapping differs from the file")
	}
	if got := state(t, first)[:6]; got != "rwwrrw" {
		t.Fatalf("first mapping after the second's instantiation: %s…, want its own pages untouched (rwwrrw…)", got)
	}
	sink = sum
}

// TestInstantiateWithoutMapping: a failing create returns its error and
// no mapping; one that maps nothing (or another file) returns neither.
func TestInstantiateWithoutMapping(t *testing.T) {
	path := imageFile(t)
	other := imageFile(t)
	im, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	boom := errors.New("boom")
	if m, err := im.Instantiate(func() error { return boom }); m != nil || err != boom {
		t.Fatalf("failing create: %v, %v; want nil, boom", m, err)
	}
	if m, err := im.Instantiate(func() error { return nil }); m != nil || err != nil {
		t.Fatalf("create mapping nothing: %v, %v; want nil, nil", m, err)
	}
	if m, err := im.Instantiate(func() error { mapPrivate(t, other); return nil }); m != nil || err != nil {
		t.Fatalf("create mapping another file: %v, %v; want nil, nil", m, err)
	}
	// The file's instances do not map it: it is no longer looked for.
	registry.mu.Lock()
	noImage := im.f.noImage
	registry.mu.Unlock()
	if !noImage {
		t.Fatal("three instantiations without a mapping of the file, and it is still looked for")
	}
	if m, err := im.Instantiate(func() error { mapPrivate(t, path); return nil }); m != nil || err != nil {
		t.Fatalf("create mapping the file after it was given up: %v, %v; want nil, nil", m, err)
	}
	var nilMapping *Mapping
	if n, err := nilMapping.Learn(); n != 0 || err != nil {
		t.Fatalf("nil Learn = %d, %v", n, err)
	}
	nilMapping.Close()
}

// TestSlowCreate: while one instantiation's create is slow (a guest's start
// function), another does not wait for it beyond gateWait: its create runs
// and it gets no mapping.
func TestSlowCreate(t *testing.T) {
	path, im := openImage(t)
	entered, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		// It may claim the other's mapping (untouched, and made while it
		// held the gate): that is allowed, and harmless.
		m, _ := im.Instantiate(func() error { close(entered); <-release; return nil })
		m.Close()
	}()
	<-entered
	called := false
	m, err := im.Instantiate(func() error { called = true; mapPrivate(t, path); return nil })
	close(release)
	<-done
	if !called || m != nil || err != nil {
		t.Fatalf("Instantiate beside a slow one: called %v, %v, %v; want its create called, no mapping, no error", called, m, err)
	}
	// The gate is free again.
	m, err = im.Instantiate(func() error { mapPrivate(t, path); return nil })
	if err != nil || m == nil {
		t.Fatalf("Instantiate after the slow one = %v, %v; want a mapping", m, err)
	}
	m.Close()
}

// TestCreatePanics: a create that panics releases the gate: the next
// instantiation gets its mapping.
func TestCreatePanics(t *testing.T) {
	path, im := openImage(t)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want the create's panic", r)
			}
		}()
		im.Instantiate(func() error { panic("boom") })
	}()
	m, err := im.Instantiate(func() error { mapPrivate(t, path); return nil })
	if err != nil || m == nil {
		t.Fatalf("Instantiate after a panic = %v, %v; want a mapping (the gate released)", m, err)
	}
	m.Close()
}

// TestClaimsOnlyUntouched: a mapping of the file made outside Instantiate
// and already used is not taken for the new one, and a claimed mapping is
// not claimed twice.
func TestClaimsOnlyUntouched(t *testing.T) {
	path, im := openImage(t)
	used := mapPrivate(t, path)
	used[0] = 1
	var a, b []byte
	ma, _ := im.Instantiate(func() error { a = mapPrivate(t, path); return nil })
	mb, _ := im.Instantiate(func() error { b = mapPrivate(t, path); return nil })
	if ma == nil || mb == nil {
		t.Fatalf("Instantiate = %v, %v; want two mappings", ma, mb)
	}
	defer ma.Close()
	defer mb.Close()
	if ma.start != addr(a) || mb.start != addr(b) {
		t.Fatalf("claimed %#x and %#x, want %#x and %#x (used one at %#x)", ma.start, mb.start, addr(a), addr(b), addr(used))
	}
}

// TestRegistryReleased: the file's entry goes with its last Image and
// Mapping; Close is idempotent.
func TestRegistryReleased(t *testing.T) {
	path := imageFile(t)
	im, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	im2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := im.Instantiate(func() error { mapPrivate(t, path); return nil })
	if err != nil || m == nil {
		t.Fatalf("Instantiate = %v, %v", m, err)
	}
	im.Close()
	im.Close()
	im2.Close()
	if n := files(); n != 1 {
		t.Fatalf("%d files registered with a mapping live, want 1", n)
	}
	m.Close()
	m.Close()
	if n := files(); n != 0 {
		t.Fatalf("%d files registered after every Close, want 0", n)
	}
}

func files() int {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return len(registry.files)
}

func TestParseMapsLine(t *testing.T) {
	for _, tc := range []struct {
		line     string
		ok       bool
		lo, hi   uintptr
		perms    string
		wantPath string
	}{
		{"7f9f9e8ff000-7f9f9e970000 rw-p 00613000 fd:01 1234   /root/.cache/toolhostd/ab.cwasm", true, 0x7f9f9e8ff000, 0x7f9f9e970000, "rw-p", "/root/.cache/toolhostd/ab.cwasm"},
		{"00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dir with space", true, 0x400000, 0x452000, "r-xp", "/usr/bin/dir with space"},
		{"7ffd1e5c1000-7ffd1e5e2000 rw-p 00000000 00:00 0                          [stack]", true, 0x7ffd1e5c1000, 0x7ffd1e5e2000, "rw-p", "[stack]"},
		{"7f0000000000-7f0000001000 ---p 00000000 00:00 0", true, 0x7f0000000000, 0x7f0000001000, "---p", ""},
		{"7f0000000000-7f0000001000 ---p 00000000 00:00 0 ", true, 0x7f0000000000, 0x7f0000001000, "---p", ""},
		{"", false, 0, 0, "", ""},
		{"7f0000001000-7f0000000000 rw-p 00000000 00:00 0", false, 0, 0, "", ""},
		{"zz-7f0000000000 rw-p 00000000 00:00 0", false, 0, 0, "", ""},
		{"7f0000000000 rw-p 00000000 00:00 0", false, 0, 0, "", ""},
		{"7f0000000000-7f0000001000 rw-p 00000000", false, 0, 0, "", ""},
	} {
		lo, hi, perms, path, ok := parseMapsLine(tc.line)
		if ok != tc.ok || ok && (lo != tc.lo || hi != tc.hi || perms != tc.perms || path != tc.wantPath) {
			t.Errorf("parseMapsLine(%q) = %#x, %#x, %q, %q, %v; want %#x, %#x, %q, %q, %v",
				tc.line, lo, hi, perms, path, ok, tc.lo, tc.hi, tc.perms, tc.wantPath, tc.ok)
		}
	}
}

// FuzzParseMapsLine: any line parses without a panic, and what parses
// prints back to a line that parses to the same.
func FuzzParseMapsLine(f *testing.F) {
	f.Add("7f9f9e8ff000-7f9f9e970000 rw-p 00613000 fd:01 1234   /root/.cache/x.cwasm")
	f.Add("7f0000000000-7f0000001000 ---p 00000000 00:00 0")
	f.Add("1-2 a b c d  e f")
	f.Fuzz(func(t *testing.T, line string) {
		lo, hi, perms, path, ok := parseMapsLine(line)
		if !ok {
			return
		}
		if hi <= lo {
			t.Fatalf("%q: range %#x-%#x", line, lo, hi)
		}
		again := fmt.Sprintf("%x-%x %s 0 0 0 %s", lo, hi, perms, path)
		lo2, hi2, perms2, path2, ok2 := parseMapsLine(again)
		if !ok2 || lo2 != lo || hi2 != hi || perms2 != perms || path2 != path {
			t.Fatalf("%q → %q → %#x %#x %q %q %v", line, again, lo2, hi2, perms2, path2, ok2)
		}
	})
}
