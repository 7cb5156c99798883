package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// cacheMagic ends every cache entry, followed by nothing: the trailer is
// magic(4) | crc32c of the payload(4) | payload length(8), little endian.
const (
	cacheMagic      = "THC1"
	cacheTrailerLen = 16
	// CacheExt ends the name of every entry's file.
	CacheExt = ".cwasm"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CompileCache stores serialized compiled components on disk, keyed by the
// component's bytes and the engine's settings. An entry whose trailer or
// checksum does not match is reported as a miss and removed: the artifact is
// recompiled, never trusted.
type CompileCache struct {
	dir string

	hits, misses, corrupt atomic.Int64
}

// CacheStats counts lookups since the cache was opened.
type CacheStats struct {
	Hits, Misses, Corrupt int64
}

// OpenCompileCache opens (creating with mode 0700) the cache under dir.
func OpenCompileCache(dir string) (*CompileCache, error) {
	if dir == "" {
		return nil, errors.New("compile cache: no directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("compile cache: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("compile cache: %w", err)
	}
	return &CompileCache{dir: dir}, nil
}

// Dir is the cache's directory.
func (c *CompileCache) Dir() string { return c.dir }

// Stats returns the hit, miss and corrupt-entry counters.
func (c *CompileCache) Stats() CacheStats {
	return CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Corrupt: c.corrupt.Load()}
}

// Key derives the entry name for a component's bytes compiled under an
// engine fingerprint (wasmtime version and every setting that changes code).
func (c *CompileCache) Key(component []byte, fingerprint string) string {
	h := sha256.New()
	h.Write([]byte(fingerprint))
	h.Write([]byte{0})
	h.Write(component)
	return hex.EncodeToString(h.Sum(nil))
}

// Path is the file of key's entry.
func (c *CompileCache) Path(key string) string { return filepath.Join(c.dir, key+CacheExt) }

// Get returns the payload stored under key. A missing entry is a miss; a
// damaged one (short, wrong trailer, wrong checksum) is removed and counted
// as corrupt and as a miss.
func (c *CompileCache) Get(key string) ([]byte, bool) {
	data, err := os.ReadFile(c.Path(key))
	if err != nil {
		c.misses.Add(1)
		return nil, false
	}
	payload, ok := unwrapEntry(data)
	if !ok {
		c.Invalidate(key)
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	return payload, true
}

// Lookup checks key's entry as Get does, streaming it through the checksum
// instead of holding it in memory, and returns its file for wasmtime to map.
// It counts hits, misses and corrupt entries as Get does.
func (c *CompileCache) Lookup(key string) (string, bool) {
	p := c.Path(key)
	sound, err := checkEntryFile(p)
	if err != nil {
		c.misses.Add(1)
		return "", false
	}
	if !sound {
		c.Invalidate(key)
		c.misses.Add(1)
		return "", false
	}
	c.hits.Add(1)
	return p, true
}

// checkEntryFile reports whether the entry at path has a sound trailer and
// checksum; the error is for a file that cannot be opened.
func checkEntryFile(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	n := st.Size() - cacheTrailerLen
	if n < 0 {
		return false, nil
	}
	var tr [cacheTrailerLen]byte
	if _, err := f.ReadAt(tr[:], n); err != nil {
		return false, nil
	}
	if string(tr[:4]) != cacheMagic || binary.LittleEndian.Uint64(tr[8:]) != uint64(n) {
		return false, nil
	}
	h := crc32.New(castagnoli)
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, n)); err != nil {
		return false, nil
	}
	return h.Sum32() == binary.LittleEndian.Uint32(tr[4:8]), nil
}

// Invalidate removes key's entry and counts it as corrupt; callers use it
// when a payload that passed its checksum is still refused by wasmtime (a
// foreign or outdated artifact).
func (c *CompileCache) Invalidate(key string) {
	c.corrupt.Add(1)
	if err := os.Remove(c.Path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return
	}
}

// Put stores payload under key atomically (temporary file, fsync, rename).
func (c *CompileCache) Put(key string, payload []byte) error {
	f, err := os.CreateTemp(c.dir, key+".*.tmp")
	if err != nil {
		return fmt.Errorf("compile cache: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	var trailer [cacheTrailerLen]byte
	copy(trailer[:4], cacheMagic)
	binary.LittleEndian.PutUint32(trailer[4:8], crc32.Checksum(payload, castagnoli))
	binary.LittleEndian.PutUint64(trailer[8:], uint64(len(payload)))
	_, err = f.Write(payload)
	if err == nil {
		_, err = f.Write(trailer[:])
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, c.Path(key))
	}
	if err != nil {
		return fmt.Errorf("compile cache: %w", err)
	}
	return nil
}

// unwrapEntry checks an entry's trailer and checksum and returns its payload.
func unwrapEntry(data []byte) ([]byte, bool) {
	if len(data) < cacheTrailerLen {
		return nil, false
	}
	n := len(data) - cacheTrailerLen
	tr := data[n:]
	if string(tr[:4]) != cacheMagic || binary.LittleEndian.Uint64(tr[8:]) != uint64(n) {
		return nil, false
	}
	payload := data[:n]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(tr[4:8]) {
		return nil, false
	}
	return payload, true
}

// compileLogged compiles a component that is not in the cache, saying so
// at info before (a large component takes seconds) and how long it took
// after. A file that does not parse (see binaryForm) fails before the
// first line.
func (e *Engine) compileLogged(name string, component []byte) (*wt.Component, error) {
	where := "no compile cache"
	if e.cache != nil {
		where = "first start; cached in " + e.cache.Dir()
	}
	bin, err := binaryForm(component)
	if err != nil {
		return nil, err
	}
	e.log.Info(fmt.Sprintf("compiling %s (%s)", name, where), zap.String("component", name), zap.Int("bytes", len(component)))
	start := time.Now()
	c, err := wt.NewComponent(e.engine, bin)
	if err != nil {
		return nil, err
	}
	e.log.Info("compiled "+name, zap.String("component", name), zap.Duration("duration", time.Since(start)))
	return c, nil
}
