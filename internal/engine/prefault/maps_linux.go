package prefault

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Page flags of /proc/self/pagemap (Documentation/admin-guide/mm/pagemap.rst).
const (
	pmPresent = 1 << 63
	pmFile    = 1 << 61 // a file page or shared anonymous: not made private
)

// noPopulate is set once the kernel refused MADV_POPULATE_WRITE.
var noPopulate atomic.Bool

// proc holds /proc/self/maps and /proc/self/pagemap open for the life of
// the process (opening them costs more than the few lines a scan reads).
// maps keeps where a listing is between reads, so scans (findNew) run under
// registry.mu; pagemap reads are independent.
var proc struct {
	once          sync.Once
	maps, pagemap int
	err           error
}

func procFiles() error {
	proc.once.Do(func() {
		if proc.maps, proc.err = unix.Open("/proc/self/maps", unix.O_RDONLY|unix.O_CLOEXEC, 0); proc.err != nil {
			return
		}
		if proc.pagemap, proc.err = unix.Open("/proc/self/pagemap", unix.O_RDONLY|unix.O_CLOEXEC, 0); proc.err != nil {
			unix.Close(proc.maps)
		}
	})
	return proc.err
}

// findNew finds the mapping of f that the last instantiation made: the
// first private writable mapping of the file that is not claimed and has no
// page present. The newest mapping is usually the lowest, so the scan of
// /proc/self/maps (in address order) ends after a dozen lines. Call it
// with registry.mu held.
func findNew(f *file) (start, size uintptr, ok bool) {
	if noPopulate.Load() || f.noImage || procFiles() != nil {
		return 0, 0, false
	}
	buf := scan.maps[:]
	var off int64 // a read at offset 0 restarts the listing
	have, lines, mapped := 0, 0, 0
	for lines < maxScanLines {
		// Small reads: the kernel formats as many lines as fit.
		n, err := unix.Pread(proc.maps, buf[have:min(have+mapsRead, len(buf))], off)
		if err != nil {
			return 0, 0, false
		}
		if n == 0 { // the end: the file's instances have no mapping of it
			f.noImage = mapped == 0
			return 0, 0, false
		}
		off += int64(n)
		have += n
		rest := buf[:have]
		for {
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				break
			}
			line := rest[:i]
			rest = rest[i+1:]
			lines++
			if !bytes.HasSuffix(line, f.suffix) { // most lines: no string made
				continue
			}
			lo, hi, perms, path, ok := parseMapsLine(string(line))
			if !ok || perms != "rw-p" || path != f.path {
				continue
			}
			mapped++
			if _, claimed := f.live[lo]; claimed {
				continue
			}
			if untouched(lo, hi-lo) {
				return lo, hi - lo, true
			}
		}
		have = copy(buf, rest) // a partial last line
		if have == len(buf) {
			return 0, 0, false // a line longer than buf
		}
	}
	return 0, 0, false
}

// maxScanLines bounds a scan: the new mapping is nearly always among the
// first dozen lines; one made in a hole that an ended agent left high in
// the address space may be missed, and that agent starts unpopulated.
const maxScanLines = 4096

// mapsRead is how much of /proc/self/maps one read asks for: a few dozen
// lines, about what a scan needs.
const mapsRead = 2 << 10

// scan is findNew's buffers, under registry.mu.
var scan struct {
	maps    [8 << 10]byte // a line is at most PATH_MAX and 100 bytes
	pagemap []byte
}

// parseMapsLine splits one line of /proc/self/maps:
// "start-end perms offset dev inode path".
func parseMapsLine(line string) (lo, hi uintptr, perms, path string, ok bool) {
	rest := line
	var fields [5]string
	for i := range fields {
		rest = strings.TrimLeft(rest, " ")
		f, after, found := strings.Cut(rest, " ")
		if f == "" || !found && i < len(fields)-1 {
			return 0, 0, "", "", false
		}
		fields[i], rest = f, after
	}
	a, b, ok := strings.Cut(fields[0], "-")
	if !ok {
		return 0, 0, "", "", false
	}
	l, err1 := strconv.ParseUint(a, 16, 64)
	h, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil || h <= l {
		return 0, 0, "", "", false
	}
	return uintptr(l), uintptr(h), fields[1], strings.TrimLeft(rest, " "), true
}

// pagemap reads the pagemap entries of [start, start+size) into buf
// (grown as needed) and returns them.
func pagemap(buf []byte, start, size uintptr) ([]byte, error) {
	if err := procFiles(); err != nil {
		return nil, err
	}
	n := 8 * int(size/pageSize)
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if got, err := unix.Pread(proc.pagemap, buf, int64(start/pageSize)*8); err != nil {
		return nil, err
	} else if got != n {
		return nil, fmt.Errorf("pagemap: read %d of %d bytes", got, n)
	}
	return buf, nil
}

// entry is the i-th pagemap entry of b.
func entry(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[8*i:]) }

// untouched reports whether no page of [start, start+size) is present.
// Call it with registry.mu held.
func untouched(start, size uintptr) bool {
	b, err := pagemap(scan.pagemap, start, size)
	if err != nil {
		return false
	}
	scan.pagemap = b
	for i := range len(b) / 8 {
		if entry(b, i)&pmPresent != 0 {
			return false
		}
	}
	return true
}

// written is the runs of pages of [start, start+size) that are present and
// private (copied on a write).
func written(start, size uintptr) ([]pageRange, error) {
	b, err := pagemap(nil, start, size)
	if err != nil {
		return nil, err
	}
	var runs []pageRange
	for i := range len(b) / 8 {
		if v := entry(b, i); v&pmPresent == 0 || v&pmFile != 0 {
			continue
		}
		p := uintptr(i)
		if n := len(runs); n > 0 && runs[n-1].hi == p {
			runs[n-1].hi++
		} else {
			runs = append(runs, pageRange{p, p + 1})
		}
	}
	return runs, nil
}

// populate makes the runs of the mapping at start present and writable.
func populate(start uintptr, runs []pageRange) {
	for _, r := range runs {
		_, _, errno := unix.Syscall(unix.SYS_MADVISE, start+r.lo*pageSize, (r.hi-r.lo)*pageSize, unix.MADV_POPULATE_WRITE)
		if errno == unix.EINVAL {
			noPopulate.Store(true)
			return
		}
	}
}
