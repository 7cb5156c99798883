package oplog

import "fmt"

// stored is what the store holds of a log, verified.
type stored struct {
	header  Header
	entries []Entry
	bytes   int64 // the entries' stored size
}

// verifier verifies a log as a backend reads it, the same over either:
// the header, then each entry in the order of its key, which must be the
// seqs 1..n without a gap, each value decoding (checksum and all) to the
// entry of that seq. Its errors wrap ErrCorrupt and name the seq.
type verifier struct {
	st   *stored
	want uint64 // the seq of the next entry
}

// newVerifier starts verifying a log of header value h (nil: missing).
func newVerifier(h []byte) (*verifier, error) {
	hd, err := decodeHeader(h)
	if err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	return &verifier{st: &stored{header: hd}, want: 1}, nil
}

// badKey is the error of a key that is no entry's where the next entry
// should be.
func (v *verifier) badKey(why string) error { return corrupt(v.want, why) }

// next checks that seq, of the next key, is the seq wanted.
func (v *verifier) next(seq uint64) error {
	switch {
	case seq > v.want:
		return corrupt(v.want, fmt.Sprintf("missing (the next stored is %d)", seq))
	case seq < v.want: // only 0, as keys are sorted
		return corrupt(seq, "out of place")
	}
	return nil
}

// add decodes val, the value of entry seq (which next accepted), and
// keeps it; the entry's Digest and Data are slices of val.
func (v *verifier) add(seq uint64, val []byte) error {
	e, err := decodeEntry(val)
	if err != nil {
		return corrupt(seq, err.Error())
	}
	if e.Seq != seq {
		return corrupt(seq, fmt.Sprintf("holds entry %d", e.Seq))
	}
	v.st.entries = append(v.st.entries, e)
	v.st.bytes += int64(len(val))
	v.want++
	return nil
}

// corrupt is the error of a log whose entry seq fails verification.
func corrupt(seq uint64, why string) error {
	return fmt.Errorf("%w at entry %d: %s", ErrCorrupt, seq, why)
}
