package oplog

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"
)

// Summary describes one log of a file.
type Summary struct {
	Key     string
	Header  Header
	Entries int   // how many entries it holds
	Bytes   int64 // the stored size of its entries
}

// Keys are the keys of the logs in the file, open or not, sorted.
func (s *Store) Keys() ([]string, error) {
	var keys []string
	err := s.view(func(root *bolt.Bucket) error {
		return root.ForEachBucket(func(k []byte) error {
			keys = append(keys, string(k))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("oplog: %s: keys: %w", s.path, err)
	}
	return keys, nil
}

// Summaries describe the logs in the file, sorted by key. They count what
// each log holds without verifying it (Store.Open does): a header that
// cannot be decoded is logged and left zero.
func (s *Store) Summaries() ([]Summary, error) {
	var sums []Summary
	err := s.view(func(root *bolt.Bucket) error {
		return root.ForEachBucket(func(k []byte) error {
			lb := root.Bucket(k)
			sum := Summary{Key: string(k)}
			h, err := decodeHeader(lb.Get(headerKey))
			if err != nil {
				s.log.Warn("corrupt log header", zap.String("file", s.path), zap.String("key", sum.Key), zap.Error(err))
			}
			sum.Header = h
			if eb := lb.Bucket(entriesBucket); eb != nil {
				c := eb.Cursor()
				for k, v := c.First(); k != nil; k, v = c.Next() {
					sum.Entries++
					sum.Bytes += int64(len(v))
				}
			}
			sums = append(sums, sum)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("oplog: %s: summaries: %w", s.path, err)
	}
	return sums, nil
}

// Remove deletes the log key from the file, durably; a key the file does
// not hold is no error. An open log cannot be removed (ErrBusy): use
// Log.Delete.
func (s *Store) Remove(key string) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("oplog: %s: %w", s.path, err)
	}
	if err := s.acquire(key); err != nil {
		return err
	}
	defer s.release(key)
	return s.submit(&request{op: opDelete, key: key})
}

// Entries are the header and the entries, in Seq order, that the file
// holds for the log key, open in this Store or not (an open log's: those
// committed so far), read in one read-only transaction and verified as
// Store.Open verifies them (ErrCorrupt). A key the file does not hold is
// ErrNotFound. The entries are the caller's.
func (s *Store) Entries(key string) (Header, []Entry, error) {
	if err := checkKey(key); err != nil {
		return Header{}, nil, fmt.Errorf("oplog: %s: %w", s.path, err)
	}
	var st *stored
	err := s.view(func(root *bolt.Bucket) error {
		var err error
		st, err = read(root, key)
		return err
	})
	switch {
	case errors.Is(err, ErrClosed):
		return Header{}, nil, err
	case err != nil:
		return Header{}, nil, fmt.Errorf("oplog: %s: log %q is %w", s.path, key, err)
	case st == nil:
		return Header{}, nil, s.errorf(key, ErrNotFound)
	}
	return st.header, st.entries, nil
}
