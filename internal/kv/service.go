package kv

// The Service: an agent's buckets as the guest sees them (open, the
// bucket's methods, atomics, batch), with its allow-list and quota.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/policy"
)

// Service serves the guests' wasi:keyvalue calls and the operators'
// commands on one Store.
type Service struct {
	store   Store
	log     *zap.Logger
	timeout time.Duration
	page    int
	ops     counters
}

// Options configure a Service; the zero Options are the defaults.
type Options struct {
	// Log receives the backend's failures (named "kv"); nil: none.
	Log *zap.Logger
	// Timeout bounds each operation: past it the call fails with
	// other("..."). Zero: 10s.
	Timeout time.Duration
	// PageSize is how many keys a list-keys page holds. Zero: DefaultPage.
	PageSize int
}

// New is a Service on store, which the caller closes after it.
func New(store Store, o Options) *Service {
	s := &Service{store: store, log: o.Log, timeout: o.Timeout, page: o.PageSize}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.timeout <= 0 {
		s.timeout = 10 * time.Second
	}
	if s.page <= 0 {
		s.page = DefaultPage
	}
	s.log = s.log.Named("kv")
	return s
}

// Policy is what an agent may do with the store (its config).
type Policy struct {
	// Stores are globs of the identifiers it may open (internal/policy's
	// syntax); nil: any. The session bucket's identifier is "session".
	Stores []string
	Quota  Quota
}

// PolicyOf is an agent's Policy from its config ([agent.X] stores, store).
func PolicyOf(a *config.Agent) Policy {
	return Policy{Stores: a.Stores, Quota: Quota{MaxKeys: int64(a.Store.MaxKeys), MaxBytes: int64(a.Store.MaxBytes)}}
}

// allows reports whether the policy lets the agent open identifier.
func (p Policy) allows(identifier string) bool {
	if p.Stores == nil {
		return true
	}
	return slices.ContainsFunc(p.Stores, func(g string) bool { return policy.Compile(g).Match(identifier) })
}

// Bucket is a guest's open bucket: the handle behind wasi:keyvalue's
// bucket resource.
type Bucket struct {
	s   *Service
	ref Ref
	q   Quota
}

// Open is store.open(identifier) for an instance of agent; session is the
// instance's session ("" for an instance without one). open("session") in
// a per-session instance is the session's private bucket "session/ID";
// elsewhere it is no-such-store. An identifier that is empty, longer than
// 255 bytes or holds a "/" is no-such-store; one the policy's Stores do not
// match is access-denied.
func (s *Service) Open(agent, session string, p Policy, identifier string) (*Bucket, error) {
	name := identifier
	switch {
	case identifier == "" || len(identifier) > 255 || strings.Contains(identifier, "/"):
		s.ops.add(opOpen, ErrNoSuchStore)
		return nil, fmt.Errorf("%w: %q is not a bucket identifier (1 to 255 bytes, no /)", ErrNoSuchStore, identifier)
	case identifier == SessionBucket && session == "":
		s.ops.add(opOpen, ErrNoSuchStore)
		return nil, fmt.Errorf("%w: %q is the bucket of a per-session instance's session, and this instance has none", ErrNoSuchStore, identifier)
	case !p.allows(identifier):
		s.ops.add(opOpen, ErrAccessDenied)
		return nil, fmt.Errorf("%w: agent %s may open only %s", ErrAccessDenied, agent, strings.Join(p.Stores, ", "))
	case identifier == SessionBucket:
		name = SessionBucket + "/" + session
	}
	s.ops.add(opOpen, nil)
	return &Bucket{s: s, ref: Ref{Agent: agent, Bucket: name}, q: p.Quota}, nil
}

// Ref is the bucket's name in the store.
func (b *Bucket) Ref() Ref { return b.ref }

// do runs f with the operation's timeout, counts it and logs a backend
// failure.
func (s *Service) do(ctx context.Context, op opKind, b Ref, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	err := f(ctx)
	s.ops.add(op, err)
	if err != nil && outcomeOf(err) == outcomeError {
		s.log.Warn("key-value operation failed", zap.String("op", opNames[op]), zap.String("agent", b.Agent),
			zap.String("bucket", b.Bucket), zap.Error(err))
	}
	return err
}

// Get is bucket.get: the value, or nil and false.
func (b *Bucket) Get(ctx context.Context, key string) (v []byte, ok bool, err error) {
	err = b.s.do(ctx, opGet, b.ref, func(ctx context.Context) error {
		v, ok, err = b.s.store.Get(ctx, b.ref, key)
		return err
	})
	return v, ok, err
}

// Set is bucket.set.
func (b *Bucket) Set(ctx context.Context, key string, value []byte) error {
	return b.s.do(ctx, opSet, b.ref, func(ctx context.Context) error { return b.s.set(ctx, b.ref, key, value, b.q) })
}

func (s *Service) set(ctx context.Context, b Ref, key string, value []byte, q Quota) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := checkValue(value); err != nil {
		return err
	}
	if value == nil {
		value = []byte{}
	}
	_, err := s.store.Update(ctx, b, key, q, func(Version) ([]byte, bool, error) { return value, true, nil })
	return err
}

// Delete is bucket.delete; deleting a missing key is not an error.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	return b.s.do(ctx, opDelete, b.ref, func(ctx context.Context) error { return b.s.remove(ctx, b.ref, key) })
}

func (s *Service) remove(ctx context.Context, b Ref, key string) error {
	if key == "" {
		return nil
	}
	_, err := s.store.Update(ctx, b, key, Quota{}, func(Version) ([]byte, bool, error) { return nil, false, nil })
	return err
}

// Exists is bucket.exists.
func (b *Bucket) Exists(ctx context.Context, key string) (ok bool, err error) {
	err = b.s.do(ctx, opExists, b.ref, func(ctx context.Context) error {
		_, ok, err = b.s.store.Get(ctx, b.ref, key)
		return err
	})
	return ok, err
}

// ListKeys is bucket.list-keys: a page of keys in bytewise order after
// cursor ("" for the first page) and the next page's cursor ("" after the
// last page). The cursor is the page's last key, so a page is stable under
// concurrent writes: no key is listed twice, and a key present throughout
// the listing is listed once.
func (b *Bucket) ListKeys(ctx context.Context, cursor string) (keys []string, next string, err error) {
	err = b.s.do(ctx, opList, b.ref, func(ctx context.Context) error {
		var more bool
		keys, more, err = b.s.store.List(ctx, b.ref, "", cursor, b.s.page)
		if more && len(keys) > 0 {
			next = keys[len(keys)-1]
		}
		return err
	})
	return keys, next, err
}

// Increment is atomics.increment: adds delta to the 8-byte little-endian
// signed integer key holds (0 if none) and returns the sum, atomically
// with respect to every other writer.
func (b *Bucket) Increment(ctx context.Context, key string, delta int64) (n int64, err error) {
	err = b.s.do(ctx, opIncrement, b.ref, func(ctx context.Context) error {
		if err := checkKey(key); err != nil {
			return err
		}
		_, err := b.s.store.Update(ctx, b.ref, key, b.q, func(cur Version) ([]byte, bool, error) {
			var v int64
			if cur.Present {
				if len(cur.Value) != 8 {
					return nil, false, fmt.Errorf("increment of %q: its value is %d bytes, not a 64-bit integer (8 bytes, little-endian)", key, len(cur.Value))
				}
				v = int64(binary.LittleEndian.Uint64(cur.Value))
			}
			n = v + delta
			return binary.LittleEndian.AppendUint64(nil, uint64(n)), true, nil
		})
		return err
	})
	return n, err
}

// CAS is atomics.cas: a key's value as read at one moment.
type CAS struct {
	b   *Bucket
	key string
	v   Version
}

// NewCAS is cas.new: reads key.
func (b *Bucket) NewCAS(ctx context.Context, key string) (c *CAS, err error) {
	err = b.s.do(ctx, opCAS, b.ref, func(ctx context.Context) error {
		c, err = b.read(ctx, key)
		return err
	})
	return c, err
}

func (b *Bucket) read(ctx context.Context, key string) (*CAS, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	c := &CAS{b: b, key: key}
	_, err := b.s.store.Update(ctx, b.ref, key, Quota{}, func(cur Version) ([]byte, bool, error) {
		c.v = cur
		return nil, false, errReadOnly
	})
	if errors.Is(err, errReadOnly) {
		err = nil
	}
	return c, err
}

// errReadOnly ends an Update that only reads the key's version.
var errReadOnly = errors.New("read only")

// Current is cas.current: the value read, or nil and false.
func (c *CAS) Current() ([]byte, bool) { return c.v.Value, c.v.Present }

// Swap is atomics.swap: sets the key to value if it still holds what the
// cas read (the same bytes, or still no value), atomically. When it does not, the error is ErrCASFailed and the returned
// CAS holds the key's value now (cas-failed(cas)).
func (c *CAS) Swap(ctx context.Context, value []byte) (*CAS, error) {
	var again *CAS
	err := c.b.s.do(ctx, opSwap, c.b.ref, func(ctx context.Context) error {
		if err := checkValue(value); err != nil {
			return err
		}
		if value == nil {
			value = []byte{}
		}
		_, err := c.b.s.store.Update(ctx, c.b.ref, c.key, c.b.q, func(cur Version) ([]byte, bool, error) {
			if cur.Present != c.v.Present || string(cur.Value) != string(c.v.Value) {
				return nil, false, ErrCASFailed
			}
			return value, true, nil
		})
		if errors.Is(err, ErrCASFailed) {
			var rerr error
			if again, rerr = c.b.read(ctx, c.key); rerr != nil {
				return rerr
			}
		}
		return err
	})
	return again, err
}

// GetMany is batch.get-many: the values of keys in their order, nil for a
// key without one. Not atomic: each key is read on its own.
func (b *Bucket) GetMany(ctx context.Context, keys []string) (vals [][]byte, err error) {
	err = b.s.do(ctx, opGetMany, b.ref, func(ctx context.Context) error {
		vals = make([][]byte, len(keys))
		for i, k := range keys {
			v, ok, err := b.s.store.Get(ctx, b.ref, k)
			if err != nil {
				return err
			}
			if ok && v == nil {
				v = []byte{}
			}
			vals[i] = v
		}
		return nil
	})
	return vals, err
}

// KV is a key and its value.
type KV struct {
	Key   string
	Value []byte
}

// SetMany is batch.set-many: each key set in order, each write atomic and
// durable on its own; not atomic as a whole: on an error (a quota) the
// keys before it are set and the rest are not.
func (b *Bucket) SetMany(ctx context.Context, kvs []KV) error {
	return b.s.do(ctx, opSetMany, b.ref, func(ctx context.Context) error {
		for _, kv := range kvs {
			if err := b.s.set(ctx, b.ref, kv.Key, kv.Value, b.q); err != nil {
				return fmt.Errorf("%w (set-many stopped at %q: the keys before it are set)", err, kv.Key)
			}
		}
		return nil
	})
}

// DeleteMany is batch.delete-many, key by key like SetMany.
func (b *Bucket) DeleteMany(ctx context.Context, keys []string) error {
	return b.s.do(ctx, opDeleteMany, b.ref, func(ctx context.Context) error {
		for _, k := range keys {
			if err := b.s.remove(ctx, b.ref, k); err != nil {
				return fmt.Errorf("%w (delete-many stopped at %q: the keys before it are removed)", err, k)
			}
		}
		return nil
	})
}
