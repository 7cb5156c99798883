package oplog

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync flushes f's data (and the metadata needed to read it back, of
// which a write inside the file's size changes none) to the disk.
func datasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
