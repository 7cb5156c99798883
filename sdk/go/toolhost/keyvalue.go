package toolhost

import (
	"errors"
	"runtime"
	"strconv"
)

// The key-value store: the standard wasi:keyvalue@0.2.0-draft2 interfaces
// (store, atomics, batch) the world imports, one to one. A component
// imports them only if the agent calls them.

// StoreErrorCode is the case of wasi:keyvalue's error variant. It is an
// error itself, so that errors.Is(err, toolhost.AccessDenied) works.
type StoreErrorCode uint8

const (
	// NoSuchStore: the identifier names no bucket this agent may have
	// (empty, over 255 bytes, holding a "/", or "session" outside a
	// per-session instance), or the host has no store.
	NoSuchStore StoreErrorCode = iota
	// AccessDenied: the agent's `stores` list does not allow the bucket.
	AccessDenied
	// StoreOther: anything else, in words: a quota, a value over the
	// backend's limit, an unreachable backend.
	StoreOther
)

var storeCodeNames = [...]string{"no-such-store", "access-denied", "other"}

func (c StoreErrorCode) String() string {
	if int(c) < len(storeCodeNames) {
		return storeCodeNames[c]
	}
	return "store-error(" + strconv.Itoa(int(c)) + ")"
}

func (c StoreErrorCode) Error() string { return c.String() }

// StoreError is a failed store operation: its case and, for StoreOther,
// the host's words.
type StoreError struct {
	Code    StoreErrorCode
	Message string
}

func (e *StoreError) Error() string {
	if e.Message == "" {
		return e.Code.String()
	}
	return e.Code.String() + ": " + e.Message
}

// Is makes errors.Is(err, code) true for the error's code.
func (e *StoreError) Is(target error) bool {
	c, ok := target.(StoreErrorCode)
	return ok && c == e.Code
}

// ErrCASFailed is the target for errors.Is of a *CASFailedError.
var ErrCASFailed = errors.New("toolhost: compare-and-swap failed: the value changed")

// CASFailedError is Swap's error when the key changed since the CAS read
// it: CAS holds the value it has now, for another try.
type CASFailedError struct{ CAS *CAS }

func (e *CASFailedError) Error() string { return ErrCASFailed.Error() }

// Is makes errors.Is(err, ErrCASFailed) true.
func (e *CASFailedError) Is(target error) bool { return target == ErrCASFailed }

// badKey is the error of a key or identifier that is not valid UTF-8: the
// host would trap on it, so the call is not made.
func badKey(what, s string) error {
	if checkUTF8(what, s) == nil {
		return nil
	}
	return &StoreError{Code: StoreOther, Message: "toolhost: " + what + " is not valid UTF-8"}
}

// Bucket is a handle on one of the agent's buckets (the resource bucket of
// wasi:keyvalue/store). Close drops it. After Close every method returns
// ErrClosed.
type Bucket struct{ x handle }

// OpenBucket opens the agent's bucket named identifier: the same
// identifier in two agents names two buckets; "session" is the bucket of
// a per-session instance's session. NoSuchStore, AccessDenied or
// StoreOther as a *StoreError.
func OpenBucket(identifier string) (*Bucket, error) {
	if err := badKey("the identifier", identifier); err != nil {
		return nil, err
	}
	h, err := openHandle(identifier, rawKVOpen, func(m memory, ret uint32) (uint32, error) {
		return liftKVResult(m, ret, offResultVal, u32)
	})
	if err != nil {
		return nil, err
	}
	return &Bucket{x: handle{h: h}}, nil
}

// Close drops the handle. It returns nil, also when called again.
func (b *Bucket) Close() error {
	b.x.close(rawKVDropBucket)
	return nil
}

// keyCall calls an import (self, key, ret) and lifts a result<T, error>
// whose payload is at off.
func keyCall[T any](x *handle, key string, off uint32, raw func(self, p, n, ret uint32), ok func(memory, uint32) T) (T, error) {
	var v T
	if err := badKey("the key", key); err != nil {
		return v, err
	}
	var serr error
	err := x.call(func(self, ret uint32) {
		p, n := stringArg(key)
		raw(self, p, n, ret)
		runtime.KeepAlive(key)
	}, func(m memory, ret uint32) { v, serr = liftKVResult(m, ret, off, ok) })
	if err != nil {
		return v, err
	}
	return v, serr
}

// Get returns the value of key; ok false if it has none.
func (b *Bucket) Get(key string) (value []byte, ok bool, err error) {
	v, err := keyCall(&b.x, key, offResultVal, rawKVGet, liftOptBytes)
	return v, v != nil, err
}

// Set sets key to value, replacing what it held; durable when it returns.
func (b *Bucket) Set(key string, value []byte) error {
	if err := badKey("the key", key); err != nil {
		return err
	}
	var serr error
	err := b.x.call(func(self, ret uint32) {
		kp, kn := stringArg(key)
		vp, vn := bytesArg(value)
		rawKVSet(self, kp, kn, vp, vn, ret)
		runtime.KeepAlive(key)
		runtime.KeepAlive(value)
	}, func(m memory, ret uint32) { _, serr = liftKVResult(m, ret, offResultVal, liftUnit) })
	if err != nil {
		return err
	}
	return serr
}

// Delete removes key; removing a missing key is not an error.
func (b *Bucket) Delete(key string) error {
	_, err := keyCall(&b.x, key, offResultVal, rawKVDelete, liftUnit)
	return err
}

// Exists reports whether key has a value.
func (b *Bucket) Exists(key string) (bool, error) {
	return keyCall(&b.x, key, offResultVal, rawKVExists, func(m memory, a uint32) bool { return liftBool(uint32(u8(m, a))) })
}

// ListKeys returns a page of the bucket's keys in bytewise order, starting
// after cursor (nil: at the first key), and the cursor of the next page
// (nil after the last page).
func (b *Bucket) ListKeys(cursor *string) (keys []string, next *string, err error) {
	var some uint32
	var c string
	if cursor != nil {
		if err := badKey("the cursor", *cursor); err != nil {
			return nil, nil, err
		}
		some, c = 1, *cursor
	}
	var r keyResponse
	var serr error
	err = b.x.call(func(self, ret uint32) {
		p, n := stringArg(c)
		rawKVListKeys(self, some, p, n, ret)
		runtime.KeepAlive(c)
	}, func(m memory, ret uint32) { r, serr = liftKVResult(m, ret, offResultVal, liftKeyResponse) })
	if err == nil {
		err = serr
	}
	return r.keys, r.cursor, err
}

// Keys returns every key of the bucket, following ListKeys' cursor to the
// last page.
func (b *Bucket) Keys() ([]string, error) {
	var all []string
	var cursor *string
	for {
		keys, next, err := b.ListKeys(cursor)
		if err != nil {
			return all, err
		}
		all = append(all, keys...)
		if next == nil {
			return all, nil
		}
		cursor = next
	}
}

// Increment adds delta to the signed 64-bit number key holds (8 bytes,
// little-endian; a missing key counts as 0) and returns the sum,
// atomically with respect to every other writer of the bucket: every
// instance of the agent, on every host (wasi:keyvalue/atomics).
func (b *Bucket) Increment(key string, delta int64) (int64, error) {
	if err := badKey("the key", key); err != nil {
		return 0, err
	}
	var v int64
	var serr error
	err := b.x.call(func(self, ret uint32) {
		p, n := stringArg(key)
		rawKVIncrement(self, p, n, delta, ret)
		runtime.KeepAlive(key)
	}, func(m memory, ret uint32) { v, serr = liftKVResult(m, ret, offKVResultS64Val, liftS64) })
	if err != nil {
		return 0, err
	}
	return v, serr
}

// CAS is key's value as read at one moment, to replace only if unchanged
// (the resource cas of wasi:keyvalue/atomics). Swap consumes it; Close
// drops one not swapped.
type CAS struct{ x handle }

// NewCAS reads key of the bucket and remembers what it read.
func (b *Bucket) NewCAS(key string) (*CAS, error) {
	h, err := keyCall(&b.x, key, offResultVal, rawKVNewCAS, u32)
	if err != nil {
		return nil, err
	}
	return &CAS{x: handle{h: h}}, nil
}

// Close drops the handle. It returns nil, also when called again, and
// after Swap.
func (c *CAS) Close() error {
	c.x.close(rawKVDropCAS)
	return nil
}

// Current returns the value read when the CAS was made; ok false if the
// key had none.
func (c *CAS) Current() (value []byte, ok bool, err error) {
	var serr error
	err = c.x.call(rawKVCurrent, func(m memory, ret uint32) { value, serr = liftKVResult(m, ret, offResultVal, liftOptBytes) })
	if err == nil {
		err = serr
	}
	return value, value != nil, err
}

// Swap sets the CAS's key to value if it still holds what the CAS read,
// atomically with respect to every other writer; it consumes c. When the
// key changed, the error is a *CASFailedError (errors.Is(err,
// ErrCASFailed)) whose CAS holds the value now, for another try:
//
//	for {
//		cur, _, err := c.Current()
//		...
//		err = c.Swap(next(cur))
//		var failed *toolhost.CASFailedError
//		if !errors.As(err, &failed) {
//			return err
//		}
//		c = failed.CAS
//	}
func (c *CAS) Swap(value []byte) error {
	var closed bool
	var out swapOutcome
	err := hostCall(func(ret uint32) {
		if closed = c.x.closed; closed {
			return
		}
		c.x.closed = true // own<cas>: the host takes it
		p, n := bytesArg(value)
		rawKVSwap(c.x.h, p, n, ret)
		runtime.KeepAlive(value)
	}, func(m memory, ret uint32) {
		if !closed {
			out = liftSwap(m, ret)
		}
	})
	switch {
	case closed:
		return ErrClosed
	case err != nil:
		return err
	case out.err != nil:
		return out.err
	case out.failed:
		return &CASFailedError{CAS: &CAS{x: handle{h: out.cas}}}
	}
	return nil
}

// KeyValue is a key and its value (batch's tuple<string, list<u8>>).
type KeyValue struct {
	Key   string
	Value []byte
}

// listArg places a block of lowerListBlock and returns its list's address
// and the memory to keep alive across the call.
func listArg(l *lowerer) (ptr uint32, keep []uint64) {
	_, mem := placeParams(l)
	if len(mem) == 0 {
		return 0, mem
	}
	return uint32(mem[0]), mem
}

// checkKeys refuses keys that are not valid UTF-8.
func checkKeys(keys []string) error {
	for i, k := range keys {
		if err := badKey("key "+strconv.Itoa(i), k); err != nil {
			return err
		}
	}
	return nil
}

// listCall calls a batch import (bucket, list, n, ret) with the lowered
// list and lifts a result<T, error>.
func listCall[T any](b *Bucket, l *lowerer, n int, raw func(self, p, n, ret uint32), ok func(memory, uint32) T) (T, error) {
	var v T
	var serr error
	// The block is made before the call, as chatCall's.
	p, keep := listArg(l)
	defer runtime.KeepAlive(keep)
	err := b.x.call(func(self, ret uint32) { raw(self, p, uint32(n), ret) },
		func(m memory, ret uint32) { v, serr = liftKVResult(m, ret, offResultVal, ok) })
	if err != nil {
		return v, err
	}
	return v, serr
}

// GetMany returns the values of keys in their order, nil for a key
// without one. It is not atomic: each key is read on its own.
func (b *Bucket) GetMany(keys []string) ([]*KeyValue, error) {
	if err := checkKeys(keys); err != nil {
		return nil, err
	}
	return listCall(b, lowerListBlock(keys, sizeString, lowerString), len(keys), rawKVGetMany,
		func(m memory, a uint32) []*KeyValue { return liftList(m, a, sizeOptPair, liftOptPair) })
}

// SetMany sets each key to its value, in order. It is not atomic: each
// write is atomic and durable on its own, and an error (a quota) stops it
// with the keys before it written.
func (b *Bucket) SetMany(kvs []KeyValue) error {
	for i, kv := range kvs {
		if err := badKey("key "+strconv.Itoa(i), kv.Key); err != nil {
			return err
		}
	}
	_, err := listCall(b, lowerListBlock(kvs, sizeKVPair, lowerKVPair), len(kvs), rawKVSetMany, liftUnit)
	return err
}

// DeleteMany removes each key, in order; missing keys are not an error.
// Not atomic, like SetMany.
func (b *Bucket) DeleteMany(keys []string) error {
	if err := checkKeys(keys); err != nil {
		return err
	}
	_, err := listCall(b, lowerListBlock(keys, sizeString, lowerString), len(keys), rawKVDeleteMany, liftUnit)
	return err
}
