package kv

import (
	"errors"
	"fmt"
)

// Errors that map to wasi:keyvalue's error variant (Kind).
var (
	// ErrNoSuchStore: the identifier names no bucket the agent may have.
	ErrNoSuchStore = errors.New("no such store")
	// ErrAccessDenied: the agent's stores list does not allow the bucket.
	ErrAccessDenied = errors.New("access denied")
	// ErrCASFailed: the key changed since the cas was read.
	ErrCASFailed = errors.New("compare-and-swap failed: the value changed")
)

// ErrBadImport marks an import line that is not a record of an export
// (not JSON, or without an agent, bucket or valid key): the input's fault,
// unlike the store's errors an import can meet.
var ErrBadImport = errors.New("not a record of an export")

// QuotaError refuses a write that would take an agent past its quota.
type QuotaError struct {
	Agent       string
	What        string // "max_keys" or "max_bytes"
	Limit, Want int64
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("quota %s of agent %s exceeded: the write needs %d, the limit is %d", e.What, e.Agent, e.Want, e.Limit)
}

// TooLargeError refuses a value past a limit: MaxValue (the store's, any
// backend's) or the etcd backend's MaxEtcdValue.
type TooLargeError struct {
	Size, Limit int
	Whose       string // whose limit it is: "the store's", "the etcd backend's"
}

func (e *TooLargeError) Error() string {
	limit := fmt.Sprintf("%d bytes", e.Limit)
	if e.Limit >= 1<<20 && e.Limit%(1<<20) == 0 {
		limit += fmt.Sprintf(" (%d MiB)", e.Limit>>20)
	}
	return fmt.Sprintf("value of %d bytes: %s limit is %s", e.Size, e.Whose, limit)
}

// Kind is the case of wasi:keyvalue's error variant an error maps to.
type Kind int

const (
	KindOther        Kind = iota // other(string): Error() is the string
	KindNoSuchStore              // no-such-store
	KindAccessDenied             // access-denied
)

// KindOf maps an error of this package to wasi:keyvalue's error variant.
func KindOf(err error) Kind {
	switch {
	case errors.Is(err, ErrNoSuchStore):
		return KindNoSuchStore
	case errors.Is(err, ErrAccessDenied):
		return KindAccessDenied
	}
	return KindOther
}
