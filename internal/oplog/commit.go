package oplog

import (
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"go.uber.org/zap"
)

// op is what a request asks of the committer.
type op uint8

const (
	opAppend op = iota // put value as entry seq of log
	opCreate           // create log key with header value
	opDelete           // delete log key, if the file has it
)

// request is one write the committer makes, in a transaction it may share
// with others.
type request struct {
	op    op
	log   *Log // opAppend
	key   string
	seq   uint64     // opAppend
	value []byte     // the encoded entry (opAppend) or header (opCreate)
	done  chan error // the outcome, once the transaction committed or failed
}

// send hands r to the committer, false if the store is closed.
func (s *Store) send(r *request) bool {
	if r.done == nil {
		r.done = make(chan error, 1)
	}
	select {
	case <-s.done:
		return false
	default:
	}
	select {
	case s.reqs <- r:
		return true
	case <-s.done:
		return false
	}
}

// wait is r's outcome. A request the committer did not take before it
// stopped fails with ErrClosed.
func (s *Store) wait(r *request) error {
	select {
	case err := <-r.done:
		return err
	case <-s.stopped:
		select {
		case err := <-r.done:
			return err
		default:
			return s.errorf(r.key, ErrClosed)
		}
	}
}

// submit sends r and waits for its outcome.
func (s *Store) submit(r *request) error {
	if !s.send(r) {
		return s.errorf(r.key, ErrClosed)
	}
	return s.wait(r)
}

// commitLoop is the committer: it takes the requests waiting, up to
// maxBatch, writes them in one transaction and answers each, until Close.
func (s *Store) commitLoop() {
	defer close(s.stopped)
	batch := make([]*request, 0, s.maxBatch)
	for {
		select {
		case <-s.done:
			return
		case r := <-s.reqs:
			batch = append(batch[:0], r)
		}
	fill:
		for len(batch) < s.maxBatch {
			select {
			case r := <-s.reqs:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		s.commit(batch)
		clear(batch)
	}
}

// commit writes batch in one transaction and answers each request.
func (s *Store) commit(batch []*request) {
	errs := make([]error, len(batch))
	err := s.db.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket(rootBucket)
		logs := map[string]*bolt.Bucket{} // entries buckets met in this transaction
		for i, r := range batch {
			var err error
			if errs[i], err = s.apply(root, logs, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		s.log.Error("commit failed", zap.String("file", s.path), zap.Int("batch", len(batch)), zap.Error(err))
		for i := range errs {
			errs[i] = fmt.Errorf("commit: %w", err)
		}
	} else {
		s.commits.Add(1)
	}
	for i, r := range batch {
		if errs[i] != nil {
			if r.op == opAppend && r.log.broken == nil {
				r.log.broken = errs[i]
			}
			r.done <- s.errorf(r.key, errs[i])
			continue
		}
		if r.op == opAppend {
			s.entries.Add(1)
			s.bytes.Add(uint64(len(r.value)))
		}
		r.done <- nil
	}
}

// apply makes r's write in root. A failure of r alone is reqErr; txErr
// fails the transaction.
func (s *Store) apply(root *bolt.Bucket, logs map[string]*bolt.Bucket, r *request) (reqErr, txErr error) {
	switch r.op {
	case opAppend:
		if r.log.broken != nil {
			return fmt.Errorf("entry %d not written: an earlier one failed (close the log and open it again): %w", r.seq, r.log.broken), nil
		}
		eb := logs[r.key]
		if eb == nil {
			if lb := root.Bucket([]byte(r.key)); lb != nil {
				eb = lb.Bucket(entriesBucket)
			}
			if eb == nil {
				return errors.New("the log is not in the file"), nil
			}
			eb.FillPercent = 0.9 // keys are appended in order
			logs[r.key] = eb
		}
		return nil, eb.Put(binary.BigEndian.AppendUint64(nil, r.seq), r.value)
	case opCreate:
		lb, err := root.CreateBucket([]byte(r.key))
		if errors.Is(err, bolterrors.ErrBucketExists) {
			return errors.New("the log is already in the file"), nil
		} else if err != nil {
			return nil, err
		}
		if err := lb.Put(headerKey, r.value); err != nil {
			return nil, err
		}
		eb, err := lb.CreateBucket(entriesBucket)
		if err != nil {
			return nil, err
		}
		eb.FillPercent = 0.9
		logs[r.key] = eb
		return nil, nil
	case opDelete:
		delete(logs, r.key)
		if err := root.DeleteBucket([]byte(r.key)); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
			return nil, err
		}
		return nil, nil
	}
	return nil, fmt.Errorf("unknown op %d", r.op)
}
