package oplog

import "fmt"

// Summary describes one log of a store.
type Summary struct {
	Key     string
	Header  Header
	Entries int   // how many entries it holds
	Bytes   int64 // the stored size of its entries
}

// Keys are the keys of the logs in the store, open or not, sorted.
func (s *Store) Keys() ([]string, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	keys, err := s.b.keys()
	if err != nil {
		return nil, fmt.Errorf("oplog: %s: keys: %w", s.path, err)
	}
	return keys, nil
}

// Summaries describe the logs in the store, sorted by key. They count
// what each log holds without verifying it (Store.Open does): a header
// that cannot be decoded is logged and left zero.
func (s *Store) Summaries() ([]Summary, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	sums, err := s.b.summaries()
	if err != nil {
		return nil, fmt.Errorf("oplog: %s: summaries: %w", s.path, err)
	}
	return sums, nil
}

// Remove deletes the log key from the store, durably; a key the store
// does not hold is no error. An open log cannot be removed (ErrBusy): use
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

// Entries are the header and the entries, in Seq order, that the store
// holds for the log key, open in this Store or not (an open log's: those
// committed so far), read in one read-only transaction (over etcd: at one
// revision) and verified as Store.Open verifies them (ErrCorrupt). A key
// the store does not hold is ErrNotFound. The entries are the caller's.
func (s *Store) Entries(key string) (Header, []Entry, error) {
	if err := checkKey(key); err != nil {
		return Header{}, nil, fmt.Errorf("oplog: %s: %w", s.path, err)
	}
	st, err := s.read(key)
	switch {
	case err != nil:
		return Header{}, nil, err
	case st == nil:
		return Header{}, nil, s.errorf(key, ErrNotFound)
	}
	return st.header, st.entries, nil
}
