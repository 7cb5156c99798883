package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"syscall"
)

// This file is "load once, start many": Open hands every agent of one
// component file the same Program, loaded (read, hashed, compiled or taken
// from the compile cache, linked) once per file content. A file that
// changes (another inode, size, modification or change time) is read
// again; if its content is new, so is its Program. Agents still running
// the old one keep it until they close it.

// fileID identifies a file's version without reading it.
type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

func statID(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	id := fileID{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(st.Dev), st.Ino
		id.ctime = st.Ctim.Sec*1e9 + st.Ctim.Nsec
	}
	return id, nil
}

// programTable holds the shared Programs by path and by content.
type programTable struct {
	mu     sync.Mutex
	byPath map[string]*progEntry
	byKey  map[string]*Program
	closed bool
	loads  int // loads in progress (each on its own goroutine)
}

// progEntry is one path's current version: loading until ready is
// closed, then prog; a failed load is reported to those who waited for it
// (err) and dropped from the table, so that the next Open tries again.
type progEntry struct {
	id    fileID
	ready chan struct{}
	prog  *Program
	err   error
}

// sharing is a shared Program's bookkeeping, guarded by programTable.mu.
type sharing struct {
	t    *programTable
	key  string // content key
	refs int    // callers of Open that have not closed it, plus one per path entry
}

// Open is OpenContext without a context: it waits for the load however
// long it takes.
func (e *Engine) Open(path string) (*Program, error) {
	return e.OpenContext(context.Background(), path)
}

// OpenContext returns the Program for the component file at path, shared
// with every other caller that opened the same content. Close it when done;
// the Program is released when its last user closes it and its file has
// changed (or the engine is closed).
//
// A load (compiling a large component takes seconds) runs on a goroutine
// of its own: when ctx ends first, OpenContext returns ctx's error at
// once, and the load goes on for the other callers waiting for it. What
// it loads for nobody (every caller gave up, the file changed or the engine
// was closed meanwhile) it releases. wasmtime cannot interrupt a compile,
// so Close does not wait for one: the engine is released after the last.
func (e *Engine) OpenContext(ctx context.Context, path string) (*Program, error) {
	t := &e.programs
	for {
		id, err := statID(path)
		if err != nil {
			return nil, fmt.Errorf("load agent: %w", err)
		}
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return nil, fmt.Errorf("load agent: %w", ErrClosed)
		}
		ent := t.byPath[path]
		if ent != nil && ent.id == id && ent.prog != nil {
			ent.prog.share.refs++
			t.mu.Unlock()
			return ent.prog, nil
		}
		if ent == nil || ent.id != id || ent.ready == nil {
			if ent != nil && ent.prog != nil {
				t.unrefLocked(ent.prog) // the file changed: the table lets go of its version
			}
			ent = &progEntry{id: id, ready: make(chan struct{})}
			if t.byPath == nil {
				t.byPath, t.byKey = map[string]*progEntry{}, map[string]*Program{}
			}
			t.byPath[path] = ent
			t.loads++
			go e.loadEntry(path, ent)
		}
		ready := ent.ready
		t.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("load agent %s: %w", path, context.Cause(ctx))
		}
		if ent.err != nil {
			return nil, ent.err // the load this caller waited for failed
		}
		// Loaded: the next round takes a reference to it (or, should the
		// file have changed meanwhile, to its new version).
	}
}

// loadEntry loads ent, path's current version, and hands the Program to the
// table's entry; one loaded for nobody is released. The last load to end
// after Close releases the engine.
func (e *Engine) loadEntry(path string, ent *progEntry) {
	p, err := e.loadShared(path)
	t := &e.programs
	t.mu.Lock()
	ready := ent.ready
	ent.ready, ent.err = nil, err
	current := t.byPath[path] == ent && !t.closed
	switch {
	case err != nil:
		if current {
			delete(t.byPath, path)
		}
	case current:
		ent.prog = p // the load's reference is the entry's
	default:
		t.unrefLocked(p) // nobody wants it
	}
	t.loads--
	last := t.closed && t.loads == 0
	t.mu.Unlock()
	close(ready)
	if last {
		e.releaseEngine()
	}
}

// loadShared reads the file and returns its content's Program with one
// reference for the caller: the one already loaded, or a new one.
func (e *Engine) loadShared(path string) (*Program, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load agent: %w", err)
	}
	key := contentKey(b, e.fp)
	t := &e.programs
	t.mu.Lock()
	if p := t.byKey[key]; p != nil {
		p.share.refs++
		t.mu.Unlock()
		return p, nil
	}
	t.mu.Unlock()
	p, err := e.Load(path, b)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	if q := t.byKey[key]; q != nil { // loaded for another path meanwhile
		q.share.refs++
		t.mu.Unlock()
		p.release()
		return q, nil
	}
	p.share = &sharing{t: t, key: key, refs: 1}
	if !t.closed {
		t.byKey[key] = p
	}
	t.mu.Unlock()
	return p, nil
}

// contentKey names a component's content under an engine fingerprint.
func contentKey(b []byte, fp string) string {
	h := sha256.New()
	h.Write([]byte(fp))
	h.Write([]byte{0})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// Content is the key of the component content the program was loaded
// from ("" for a Program made by Load, which is not shared).
func (p *Program) Content() string {
	if p.share == nil {
		return ""
	}
	return p.share.key
}

// ContentKey is the key of the content of the component file at path now,
// as Program.Content reports it: equal keys mean the same component. It
// reads and hashes the file only when it changed since it was opened.
func (e *Engine) ContentKey(path string) (string, error) {
	id, err := statID(path)
	if err != nil {
		return "", err
	}
	t := &e.programs
	t.mu.Lock()
	if ent := t.byPath[path]; ent != nil && ent.id == id && ent.prog != nil {
		k := ent.prog.share.key
		t.mu.Unlock()
		return k, nil
	}
	t.mu.Unlock()
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return contentKey(b, e.fp), nil
}

// unrefLocked drops one reference of a shared program, releasing it at
// zero (t.mu held).
func (t *programTable) unrefLocked(p *Program) {
	p.share.refs--
	if p.share.refs > 0 {
		return
	}
	if t.byKey[p.share.key] == p {
		delete(t.byKey, p.share.key)
	}
	p.release()
}

// closeAll lets go of every table reference (Engine.Close): programs that
// agents still use are released when they close them. It reports how many
// loads are still in progress: the last of them releases the engine.
func (t *programTable) closeAll() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for path, ent := range t.byPath {
		if ent.prog != nil {
			t.unrefLocked(ent.prog)
		}
		delete(t.byPath, path)
	}
	return t.loads
}

// Compiling is how many loads of Open are in progress, including those
// every caller gave up on.
func (e *Engine) Compiling() int {
	t := &e.programs
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.loads
}
