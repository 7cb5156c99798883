package oplog

import "fmt"

// op is what a request asks of the committer.
type op uint8

const (
	opAppend op = iota // put value as entry seq of log
	opCreate           // create log key with header value
	opDelete           // delete log key, if the store has it
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
// maxBatch, writes them together (see commit) and answers each, until
// Close.
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

// commit writes batch (in one transaction over bbolt, in as few as etcd's
// limits allow over etcd) and answers each request. An append of a log an
// earlier failure broke is refused, not written.
func (s *Store) commit(batch []*request) {
	errs := make([]error, len(batch))
	for i, r := range batch {
		if r.op == opAppend && r.log.broken != nil {
			errs[i] = fmt.Errorf("entry %d not written: an earlier one failed (close the log and open it again): %w", r.seq, r.log.broken)
		}
	}
	s.commits.Add(uint64(s.b.commit(batch, errs)))
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
