//go:build !linux

package oplog

import "os"

// datasync flushes f to the disk (fsync: fdatasync is Linux's).
func datasync(f *os.File) error { return f.Sync() }
