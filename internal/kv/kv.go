// Package kv is the key-value store below the guest's wasi:keyvalue
// imports (store, atomics, batch @0.2.0-draft2): a Store backend (bbolt in
// the state directory on one host, the cluster's etcd under its own prefix)
// and a Service over it that names an agent's buckets, enforces its
// `stores` allow-list and quotas, counts operations, and serves the
// operators' commands (ls, get, put, rm, export, import).
//
// Every key lives in a bucket of an agent (Ref): the same identifier in two
// agents names two buckets. A per-session instance's open("session") is the
// bucket "session/ID" of its session. Keys are ordered bytewise, values are
// opaque bytes; an increment's value is a signed 64-bit little-endian
// integer (8 bytes).
package kv

import (
	"context"
	"errors"
	"fmt"
)

// Limits common to the backends.
const (
	MaxKeyBytes   = 4096     // a key is 1 to MaxKeyBytes bytes
	MaxValue      = 32 << 20 // the largest value of any backend (32 MiB)
	MaxEtcdValue  = 1 << 20  // the etcd backend's largest value (1 MiB)
	DefaultPage   = 1000     // keys per list-keys page
	SessionBucket = "session"
)

// Ref names a bucket: an agent's, by its stored name (the identifier the
// guest opened, or "session/ID" for a session's bucket).
type Ref struct {
	Agent  string
	Bucket string
}

func (r Ref) String() string { return r.Agent + "/" + r.Bucket }

// Quota bounds what an agent keeps; zero fields are unbounded. A write
// that would take the agent past a bound is refused and writes nothing; a
// write that shrinks what it keeps is always allowed.
type Quota struct {
	MaxKeys  int64
	MaxBytes int64 // keys' and values' bytes
}

// Usage is what an agent keeps: its keys, and their keys' and values'
// bytes.
type Usage struct {
	Keys  int64
	Bytes int64
}

// Version is a key's value as read at one moment, for CompareAndSwap.
type Version struct {
	Value   []byte
	Present bool
	Rev     int64 // the backend's revision of the key (etcd), else 0
}

// Store is a backend. Its writes are durable when they return, and
// Update's function runs against the current value atomically with
// respect to every other writer of the store (other handles and hosts
// included).
type Store interface {
	// Get returns the value of key; ok false if it has none.
	Get(ctx context.Context, b Ref, key string) (value []byte, ok bool, err error)
	// Update replaces key's value with what fn returns for the current one
	// (keep false: removes it) and returns what fn returned. An error of fn
	// is returned unchanged and nothing is written; so is a quota refusal.
	Update(ctx context.Context, b Ref, key string, q Quota, fn UpdateFunc) ([]byte, error)
	// List returns up to limit keys of b that start with prefix and sort
	// after `after` (all when after is ""), in bytewise order, and whether
	// more follow.
	List(ctx context.Context, b Ref, prefix, after string, limit int) (keys []string, more bool, err error)
	// Buckets lists the agent's buckets that hold keys, in order.
	Buckets(ctx context.Context, agent string) ([]string, error)
	// Agents lists the agents that keep keys, in order.
	Agents(ctx context.Context) ([]string, error)
	// Usage is what the agent keeps.
	Usage(ctx context.Context, agent string) (Usage, error)
	// Close releases the store.
	Close() error
}

// UpdateFunc computes a key's new value from the current one.
type UpdateFunc func(cur Version) (value []byte, keep bool, err error)

// checkQuota returns the usage after a write that changes it by dk keys
// and db bytes, or a QuotaError.
func checkQuota(agent string, u Usage, dk, db int64, q Quota) (Usage, error) {
	n := Usage{Keys: u.Keys + dk, Bytes: u.Bytes + db}
	if q.MaxKeys > 0 && dk > 0 && n.Keys > q.MaxKeys {
		return u, &QuotaError{Agent: agent, What: "max_keys", Limit: q.MaxKeys, Want: n.Keys}
	}
	if q.MaxBytes > 0 && db > 0 && n.Bytes > q.MaxBytes {
		return u, &QuotaError{Agent: agent, What: "max_bytes", Limit: q.MaxBytes, Want: n.Bytes}
	}
	return n, nil
}

// delta is the change in usage of replacing cur with (value, keep).
func delta(key string, cur Version, value []byte, keep bool) (dk, db int64) {
	if cur.Present {
		dk--
		db -= int64(len(key) + len(cur.Value))
	}
	if keep {
		dk++
		db += int64(len(key) + len(value))
	}
	return dk, db
}

// checkKey validates a key.
func checkKey(key string) error {
	if key == "" {
		return errors.New("empty key")
	}
	if len(key) > MaxKeyBytes {
		return fmt.Errorf("key of %d bytes: the limit is %d", len(key), MaxKeyBytes)
	}
	return nil
}

// checkValue refuses a value past MaxValue, whoever writes it.
func checkValue(value []byte) error {
	if len(value) > MaxValue {
		return &TooLargeError{Size: len(value), Limit: MaxValue, Whose: "the store's"}
	}
	return nil
}
