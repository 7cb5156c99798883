package kv

// The bbolt backend: one file in the state directory.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Top-level bbolt buckets: data/AGENT/BUCKET/KEY = value, usage/AGENT =
// keys and bytes (two big-endian int64).
var (
	dataRoot  = []byte("data")
	usageRoot = []byte("usage")
)

// Bolt is a Store in one bbolt file. Every write is one transaction,
// fsynced before it returns.
type Bolt struct {
	db   *bolt.DB
	path string
}

// BoltOptions configure OpenBolt.
type BoltOptions struct {
	// LockTimeout is how long to wait for another process's lock on the
	// file (default 1s).
	LockTimeout time.Duration
}

// OpenBolt opens (or creates) the store at path. A file locked by another
// process or not a valid store is an error naming the file and what to do.
func OpenBolt(path string, o BoltOptions) (*Bolt, error) {
	if o.LockTimeout == 0 {
		o.LockTimeout = time.Second
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.LockTimeout})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("key-value store %s is locked by another process (another toolhostd with the same state_dir?): stop it, or give this one another state_dir: %w", path, err)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrChecksum), errors.Is(err, bolterrors.ErrVersionMismatch):
		return nil, fmt.Errorf("key-value store %s is corrupt or not a bbolt file: move it away (toolhostd then starts with an empty store) and restore a backup with toolhostd kv import: %w", path, err)
	case err != nil:
		return nil, fmt.Errorf("key-value store %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, n := range [][]byte{dataRoot, usageRoot} {
			if _, err := tx.CreateBucketIfNotExists(n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("key-value store %s: %w", path, err)
	}
	return &Bolt{db: db, path: path}, nil
}

// Path is the store's file.
func (s *Bolt) Path() string { return s.path }

// Close closes the file.
func (s *Bolt) Close() error { return s.db.Close() }

// bucket is b's bbolt bucket; nil if it holds no keys (and !create).
func bucket(tx *bolt.Tx, b Ref, create bool) (*bolt.Bucket, error) {
	root := tx.Bucket(dataRoot)
	a := root.Bucket([]byte(b.Agent))
	if a == nil {
		if !create {
			return nil, nil
		}
		var err error
		if a, err = root.CreateBucket([]byte(b.Agent)); err != nil {
			return nil, err
		}
	}
	bk := a.Bucket([]byte(b.Bucket))
	if bk == nil && create {
		return a.CreateBucket([]byte(b.Bucket))
	}
	return bk, nil
}

func (s *Bolt) Get(_ context.Context, b Ref, key string) ([]byte, bool, error) {
	var v []byte
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) error {
		bk, err := bucket(tx, b, false)
		if bk == nil || err != nil {
			return err
		}
		if x := bk.Get([]byte(key)); x != nil {
			v, ok = bytes.Clone(x), true
		}
		return nil
	})
	return v, ok, err
}

// Update runs fn in a write transaction, fsynced before it returns. The
// wait is bounded by ctx: a disk that does not answer makes the call fail
// when ctx ends (the transaction may still commit after).
func (s *Bolt) Update(ctx context.Context, b Ref, key string, q Quota, fn UpdateFunc) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []byte
	done := make(chan error, 1)
	go func() { done <- s.db.Update(func(tx *bolt.Tx) error { return s.update(tx, b, key, q, fn, &out) }) }()
	select {
	case err := <-done:
		if err != nil {
			return nil, err
		}
		return out, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("bbolt write to %s not done in time (a slow or stuck disk?); it may still complete: %w", s.path, ctx.Err())
	}
}

func (s *Bolt) update(tx *bolt.Tx, b Ref, key string, q Quota, fn UpdateFunc, out *[]byte) error {
	bk, err := bucket(tx, b, true)
	if err != nil {
		return err
	}
	cur := Version{}
	if x := bk.Get([]byte(key)); x != nil {
		cur = Version{Value: bytes.Clone(x), Present: true}
	}
	value, keep, err := fn(cur)
	if err != nil {
		return err
	}
	dk, db := delta(key, cur, value, keep)
	u, err := checkQuota(b.Agent, readUsage(tx, b.Agent), dk, db, q)
	if err != nil {
		return err
	}
	if keep {
		err = bk.Put([]byte(key), value)
	} else if cur.Present {
		err = bk.Delete([]byte(key))
	}
	if err != nil {
		return err
	}
	if !keep {
		if err := dropIfEmpty(tx, b, bk); err != nil {
			return err
		}
	}
	*out = value
	return writeUsage(tx, b.Agent, u)
}

// dropIfEmpty removes an emptied bucket (and an emptied agent), so that
// Buckets and Agents list only what holds keys.
func dropIfEmpty(tx *bolt.Tx, b Ref, bk *bolt.Bucket) error {
	if k, _ := bk.Cursor().First(); k != nil {
		return nil
	}
	a := tx.Bucket(dataRoot).Bucket([]byte(b.Agent))
	if err := a.DeleteBucket([]byte(b.Bucket)); err != nil {
		return err
	}
	if k, _ := a.Cursor().First(); k == nil {
		return tx.Bucket(dataRoot).DeleteBucket([]byte(b.Agent))
	}
	return nil
}

func readUsage(tx *bolt.Tx, agent string) Usage {
	return decodeUsage(tx.Bucket(usageRoot).Get([]byte(agent)))
}

func writeUsage(tx *bolt.Tx, agent string, u Usage) error {
	if u.Keys == 0 {
		return tx.Bucket(usageRoot).Delete([]byte(agent))
	}
	return tx.Bucket(usageRoot).Put([]byte(agent), []byte(encodeUsage(u)))
}

func (s *Bolt) List(_ context.Context, b Ref, prefix, after string, limit int) ([]string, bool, error) {
	var keys []string
	more := false
	err := s.db.View(func(tx *bolt.Tx) error {
		bk, err := bucket(tx, b, false)
		if bk == nil || err != nil {
			return err
		}
		c := bk.Cursor()
		k, _ := c.Seek([]byte(prefix))
		if after != "" && after >= prefix {
			k, _ = c.Seek([]byte(after))
			if k != nil && string(k) == after {
				k, _ = c.Next()
			}
		}
		for ; k != nil && bytes.HasPrefix(k, []byte(prefix)); k, _ = c.Next() {
			if len(keys) == limit {
				more = true
				break
			}
			keys = append(keys, string(k))
		}
		return nil
	})
	return keys, more, err
}

func (s *Bolt) Buckets(_ context.Context, agent string) ([]string, error) {
	var out []string
	err := s.db.View(func(tx *bolt.Tx) error {
		a := tx.Bucket(dataRoot).Bucket([]byte(agent))
		if a == nil {
			return nil
		}
		return a.ForEachBucket(func(k []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	return out, err
}

func (s *Bolt) Agents(context.Context) ([]string, error) {
	var out []string
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(dataRoot).ForEachBucket(func(k []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	return out, err
}

func (s *Bolt) Usage(_ context.Context, agent string) (Usage, error) {
	var u Usage
	err := s.db.View(func(tx *bolt.Tx) error {
		u = readUsage(tx, agent)
		return nil
	})
	return u, err
}
