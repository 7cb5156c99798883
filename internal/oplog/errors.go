package oplog

import "errors"

// Errors of the package; an error returned wraps one of them (test with
// errors.Is) when it is the case it describes, and names the store (its
// file, or "etcd:" and its prefix) and the log's key.
var (
	// ErrClosed: the log or its Store is closed, or the log was deleted.
	ErrClosed = errors.New("closed")
	// ErrBusy: the log is open in this Store (Store.Open of an open key,
	// Store.Remove of an open log).
	ErrBusy = errors.New("already open")
	// ErrCorrupt: what the store holds for the log fails its checksum,
	// cannot be decoded, or its seqs have a gap. The error names the seq.
	ErrCorrupt = errors.New("corrupt")
	// ErrNotFound: the store holds no log of the key (Store.Entries).
	ErrNotFound = errors.New("not found")
	// ErrFenced: over etcd, a transaction writing the log failed its
	// EtcdOptions.Guard (this host no longer owns the log's agent) and
	// wrote nothing. An Append so fenced leaves the log unusable, as any
	// failed Append does.
	ErrFenced = errors.New("fenced")
)
