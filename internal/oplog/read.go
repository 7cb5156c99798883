package oplog

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// stored is what the file holds of a log, verified.
type stored struct {
	header  Header
	entries []Entry
	bytes   int64 // the entries' stored size
}

// read reads and verifies the log key of root: nil if root holds none, an
// error wrapping ErrCorrupt if it fails verification.
func read(root *bolt.Bucket, key string) (*stored, error) {
	lb := root.Bucket([]byte(key))
	if lb == nil {
		return nil, nil
	}
	h, err := decodeHeader(lb.Get(headerKey))
	if err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	eb := lb.Bucket(entriesBucket)
	if eb == nil {
		return nil, fmt.Errorf("%w: no bucket of entries", ErrCorrupt)
	}
	st := &stored{header: h}
	want := uint64(1)
	c := eb.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(k) != 8 {
			return nil, corrupt(want, fmt.Sprintf("a key of %d bytes (%q) where the entry should be", len(k), k))
		}
		seq := binary.BigEndian.Uint64(k)
		switch {
		case seq > want:
			return nil, corrupt(want, fmt.Sprintf("missing (the next stored is %d)", seq))
		case seq < want: // only 0, as keys are sorted
			return nil, corrupt(seq, "out of place")
		case v == nil:
			return nil, corrupt(seq, "a bucket, not a value")
		}
		e, err := decodeEntry(bytes.Clone(v))
		if err != nil {
			return nil, corrupt(seq, err.Error())
		}
		if e.Seq != seq {
			return nil, corrupt(seq, fmt.Sprintf("holds entry %d", e.Seq))
		}
		st.entries = append(st.entries, e)
		st.bytes += int64(len(v))
		want++
	}
	return st, nil
}

// corrupt is the error of a log whose entry seq fails verification.
func corrupt(seq uint64, why string) error {
	return fmt.Errorf("%w at entry %d: %s", ErrCorrupt, seq, why)
}
