package host

import (
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

// Open returns the Program for the component file at path, shared with
// every other caller that opened the same content. Close it when done;
// the Program is released when its last user closes it and its file has
// changed (or the host is closed).
func (h *Host) Open(path string) (*Program, error) {
	t := &h.programs
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
		e := t.byPath[path]
		if e != nil && e.id == id {
			if e.prog != nil {
				e.prog.share.refs++
				t.mu.Unlock()
				return e.prog, nil
			}
			if ready := e.ready; ready != nil {
				t.mu.Unlock()
				<-ready
				if e.err != nil {
					return nil, e.err // the load this caller waited for failed
				}
				continue
			}
		}
		if e != nil && e.prog != nil {
			t.unrefLocked(e.prog) // the file changed: the table lets go of its version
		}
		e = &progEntry{id: id, ready: make(chan struct{})}
		if t.byPath == nil {
			t.byPath, t.byKey = map[string]*progEntry{}, map[string]*Program{}
		}
		t.byPath[path] = e
		t.mu.Unlock()

		p, err := h.loadShared(path)

		t.mu.Lock()
		ready := e.ready
		e.ready, e.err = nil, err
		current := t.byPath[path] == e && !t.closed
		switch {
		case err != nil:
			if current {
				delete(t.byPath, path)
			}
		case current:
			e.prog = p
			p.share.refs++ // the entry's reference
		}
		t.mu.Unlock()
		close(ready)
		return p, err
	}
}

// loadShared reads the file and returns its content's Program with one
// reference for the caller: the one already loaded, or a new one.
func (h *Host) loadShared(path string) (*Program, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load agent: %w", err)
	}
	key := contentKey(b, h.fp)
	t := &h.programs
	t.mu.Lock()
	if p := t.byKey[key]; p != nil {
		p.share.refs++
		t.mu.Unlock()
		return p, nil
	}
	t.mu.Unlock()
	p, err := h.Load(path, b)
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
func (h *Host) ContentKey(path string) (string, error) {
	id, err := statID(path)
	if err != nil {
		return "", err
	}
	t := &h.programs
	t.mu.Lock()
	if e := t.byPath[path]; e != nil && e.id == id && e.prog != nil {
		k := e.prog.share.key
		t.mu.Unlock()
		return k, nil
	}
	t.mu.Unlock()
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return contentKey(b, h.fp), nil
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

// closeAll lets go of every table reference (Host.Close): programs that
// agents still use are released when they close them.
func (t *programTable) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for path, e := range t.byPath {
		if e.prog != nil {
			t.unrefLocked(e.prog)
		}
		delete(t.byPath, path)
	}
}
