package oplog

import (
	"fmt"
	"slices"
	"sync"
)

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
	// inline: send found the store idle and gave r's waiter the baton:
	// wait commits r's batch on the waiter's own goroutine.
	inline bool
}

// Group commit. Requests queue in the store (send); one party at a time
// holds the baton (committer.baton) and commits the queue's next batch in one
// transaction. A request sent while the store is idle takes the baton, and
// its waiter commits on its own goroutine (wait): one instance appending
// alone pays no hand-off between goroutines, which from a guest's locked
// OS thread costs about as much again as the write. What queued meanwhile
// goes to the committer goroutine (commitLoop), which commits batch after
// batch until the queue is empty and the store idle again.

// committer is a Store's group commit: mu guards queue, baton and closing.
type committer struct {
	mu      sync.Mutex
	queue   []*request    // sent, not yet taken into a batch
	baton   bool          // the baton is held: a commit is under way or due
	closing bool          // Close was called: send refuses
	idle    chan struct{} // closed when the baton is put down while closing
	wake    chan struct{} // hands the baton to the committer (1 buffered)
	done    chan struct{} // closed by Close, once idle: the committer stops
	stopped chan struct{} // closed by the committer when it returns
}

// send queues r, false if the store is closed. Every request sent must be
// waited for (wait): its waiter may hold the baton.
func (s *Store) send(r *request) bool {
	if r.done == nil {
		r.done = make(chan error, 1)
	}
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if s.c.closing {
		return false
	}
	s.c.queue = append(s.c.queue, r)
	if !s.c.baton {
		s.c.baton, r.inline = true, true
	}
	return true
}

// wait is r's outcome, once the transaction that holds r is committed (by
// this goroutine when r took the baton).
func (s *Store) wait(r *request) error {
	if r.inline {
		r.inline = false
		if s.commitQueued() {
			s.c.wake <- struct{}{} // never blocks: the committer took the last one before the baton went back
		}
	}
	return <-r.done
}

// waitAll waits for every request of rs, and returns the first failure.
func (s *Store) waitAll(rs []*request) error {
	var first error
	for _, r := range rs {
		if err := s.wait(r); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// submit sends r and waits for its outcome.
func (s *Store) submit(r *request) error {
	if !s.send(r) {
		return s.errorf(r.key, ErrClosed)
	}
	return s.wait(r)
}

// commitQueued commits the queue's next batch, up to maxBatch, the caller
// holding the baton, and reports whether requests remain: then the caller
// keeps the baton (the committer is to go on); else the store is idle.
func (s *Store) commitQueued() (more bool) {
	s.c.mu.Lock()
	n := min(len(s.c.queue), s.lim.maxBatch)
	batch := slices.Clone(s.c.queue[:n])
	s.c.queue = slices.Delete(s.c.queue, 0, n)
	s.c.mu.Unlock()
	if len(batch) > 0 {
		s.commit(batch)
	}
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if len(s.c.queue) > 0 {
		return true
	}
	s.c.baton = false
	if s.c.closing {
		close(s.c.idle)
	}
	return false
}

// commitLoop is the committer: given the baton (wake), it commits batch
// after batch until the queue is empty; it returns at Close, once the
// store is idle.
func (s *Store) commitLoop() {
	defer close(s.c.stopped)
	for {
		select {
		case <-s.c.done:
			return
		case <-s.c.wake:
			for s.commitQueued() {
			}
		}
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
	s.n.commits.Add(uint64(s.b.commit(batch, errs)))
	for i, r := range batch {
		if errs[i] != nil {
			if r.op == opAppend && r.log.broken == nil {
				r.log.broken = errs[i]
			}
			r.done <- s.errorf(r.key, errs[i])
			continue
		}
		if r.op == opAppend {
			s.n.entries.Add(1)
			s.n.bytes.Add(uint64(len(r.value)))
		}
		r.done <- nil
	}
}
