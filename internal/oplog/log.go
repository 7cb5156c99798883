package oplog

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Log is one open log of a Store: the operation log of one live instance.
// Its methods are safe for concurrent use.
type Log struct {
	s        *Store
	key      string
	header   Header
	recorded []Entry

	size logSize // recorded + appended

	mu       sync.Mutex // serialises Append; guards the fields below
	next     uint64     // the seq of the next Append
	closed   bool
	deleting bool // Delete closed it: finish removes the log
	// later are AppendLater's entries not yet handed to the committer: the
	// next Append (or Close) sends them first.
	later []*request

	end ending // Close's and Delete's last step (finish)

	// broken is the error of a failed commit of one of the log's entries:
	// the log may now have a gap after its last durable entry, so the
	// committer refuses its later ones. Only the committer touches it.
	broken error
}

// logSize is a Log's length: its entries and their stored bytes.
type logSize struct {
	entries, bytes atomic.Int64
}

// add counts one entry of n stored bytes.
func (z *logSize) add(n int) {
	z.entries.Add(1)
	z.bytes.Add(int64(n))
}

// ending is how a Log ends: the Appends under way it waits for, once, and
// the outcome of removing it (Delete).
type ending struct {
	inflight  sync.WaitGroup // Appends handed to the committer, not yet answered
	once      sync.Once
	deleteErr error
}

// Open opens the log key: "agent" or "agent/session" (not empty, at most
// 512 bytes, valid UTF-8). If the store has no log of that key, Open
// creates it, durably, with header h; if it has, the log keeps its own
// header (see Log.Header) and Open reads and verifies its entries (see
// Log.Recorded), failing with ErrCorrupt if they do not verify. A key
// already open in this Store is an error, ErrBusy, until that Log is
// closed.
func (s *Store) Open(key string, h Header) (*Log, error) {
	if err := checkKey(key); err != nil {
		return nil, fmt.Errorf("oplog: %s: %w", s.path, err)
	}
	if err := s.acquire(key); err != nil {
		return nil, err
	}
	l, err := s.openLog(key, h)
	if err != nil {
		s.release(key)
		return nil, err
	}
	return l, nil
}

func (s *Store) openLog(key string, h Header) (*Log, error) {
	st, err := s.read(key)
	if err != nil {
		s.log.Warn("log not opened", zap.String("file", s.path), zap.String("key", key), zap.Error(err))
		return nil, err
	}
	if st == nil {
		h.Started = h.Started.UTC()
		if err := s.submit(&request{op: opCreate, key: key, value: appendHeader(nil, h)}); err != nil {
			return nil, err
		}
		st = &stored{header: h}
	}
	l := &Log{s: s, key: key, header: st.header, recorded: st.entries, next: uint64(len(st.entries)) + 1}
	l.size.entries.Store(int64(len(st.entries)))
	l.size.bytes.Store(st.bytes)
	return l, nil
}

// Key is the log's key.
func (l *Log) Key() string { return l.key }

// Header is what the log recorded at its start: the h of the Store.Open
// that created it.
func (l *Log) Header() Header { return l.header }

// Recorded are the entries the log held when it was opened, in Seq order:
// what to replay. The caller must not modify them.
func (l *Log) Recorded() []Entry { return l.recorded }

// Len is how many entries the log holds, recorded and appended, and their
// stored size.
func (l *Log) Len() (entries int, bytes int64) {
	return int(l.size.entries.Load()), l.size.bytes.Load()
}

// Append adds e to the log, setting its Seq (the next of the log: 1, 2, 3
// …) and At (now), and returns its Seq once it is in a committed
// transaction: fsynced (bbolt), or committed by etcd's quorum. Concurrent
// Appends are serialised in the order they were called. After Close,
// Delete or Store.Close it fails with ErrClosed. An Append that fails for
// another reason (the disk, etcd unreachable, the log fenced: ErrFenced)
// leaves the log unusable, as the store may lack that entry but not the
// next: later Appends fail too and the log must be closed and opened
// again. An entry larger than the store takes (over etcd, about 1.5 MiB)
// is refused without taking a seq.
func (l *Log) Append(e Entry) (uint64, error) {
	p, err := l.AppendStart(e)
	if err != nil {
		return 0, err
	}
	return p.Wait()
}

// AppendStart is Append in two halves: it hands e to the committer and
// returns at once; Pending.Wait is the rest, which must be called, once or
// more, by any goroutine (the transaction may be its to commit). Between
// the two the caller does what need not wait for the entry (a guest's
// thread hands the wait and the call it guards to another goroutine, and
// is woken once, for both).
func (l *Log) AppendStart(e Entry) (*Pending, error) {
	s := l.s
	s.n.appends.Add(1)
	if err := s.checkEntry(&e); err != nil {
		return nil, s.errorf(l.key, err)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, s.errorf(l.key, ErrClosed)
	}
	e.Seq, e.At = l.next, time.Now().UTC()
	r := &request{op: opAppend, log: l, key: l.key, seq: e.Seq, value: appendEntry(nil, &e), done: make(chan error, 1)}
	l.end.inflight.Add(1)
	later := l.sendLaterLocked()
	if !s.send(r) {
		l.mu.Unlock()
		l.end.inflight.Done()
		return nil, s.errorf(l.key, ErrClosed)
	}
	l.next++
	l.mu.Unlock()
	// later's are in the same transaction as r, or an earlier one.
	return &Pending{l: l, reqs: append(later, r)}, nil
}

// Pending is an AppendStart's entry until it is committed.
type Pending struct {
	l    *Log
	reqs []*request // the log's AppendLater entries sent with it, then it
	once sync.Once
	seq  uint64
	err  error
}

// Wait returns the entry's Seq once it is in a committed transaction, as
// Append does; every call returns the same.
func (p *Pending) Wait() (uint64, error) {
	p.once.Do(func() {
		defer p.l.end.inflight.Done()
		if p.err = p.l.s.waitAll(p.reqs); p.err != nil {
			return
		}
		r := p.reqs[len(p.reqs)-1]
		p.l.size.add(len(r.value))
		p.seq = r.seq
	})
	return p.seq, p.err
}

// AppendLater is Append without the fsync: the entry takes the next seq
// at once and is written with the log's next Append, which waits for it
// (or by Close), sharing that transaction. A crash before then loses it
// and every entry after it, never one before it: what a log holds is
// always a prefix of what was appended. For entries whose loss a replay
// makes up for by making the call again (a read, a result the guest's
// next recorded effect would have made durable anyway).
func (l *Log) AppendLater(e Entry) (uint64, error) {
	s := l.s
	s.n.appends.Add(1)
	if err := s.checkEntry(&e); err != nil {
		return 0, s.errorf(l.key, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, s.errorf(l.key, ErrClosed)
	}
	e.Seq, e.At = l.next, time.Now().UTC()
	r := &request{op: opAppend, log: l, key: l.key, seq: e.Seq, value: appendEntry(nil, &e), done: make(chan error, 1)}
	l.later = append(l.later, r)
	l.next++
	l.size.add(len(r.value))
	return e.Seq, nil
}

// sendLaterLocked hands AppendLater's entries to the committer, in order,
// and returns them for the caller to wait for (l.mu held). Entries the
// committer cannot take (the store closed) are lost, as in a crash.
func (l *Log) sendLaterLocked() []*request {
	later := l.later
	l.later = nil
	sent := later[:0]
	for _, r := range later {
		if !l.s.send(r) {
			break
		}
		sent = append(sent, r)
	}
	return sent
}

// flushLater writes AppendLater's entries and waits for them.
func (l *Log) flushLater() {
	l.mu.Lock()
	later := l.sendLaterLocked()
	l.mu.Unlock()
	_ = l.s.waitAll(later) // a failure is the committer's log line and the log's broken
}

// Close closes the log, once AppendLater's entries are written and the
// Appends under way answered, and releases its key; the log stays in the
// store for a later Store.Open.
// Close is idempotent.
func (l *Log) Close() error {
	l.flushLater()
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.finish()
	return nil
}

// Delete closes the log and removes it from the store, durably: its
// instance ended cleanly. After Close or Delete it fails with ErrClosed.
func (l *Log) Delete() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return l.s.errorf(l.key, ErrClosed)
	}
	l.closed, l.deleting = true, true
	l.later = nil // removed with the log
	l.mu.Unlock()
	l.finish()
	return l.end.deleteErr
}

// finish waits for the Appends under way, removes the log from the store
// if Delete closed it, and releases the key. It runs once; other callers
// wait for it.
func (l *Log) finish() {
	l.end.once.Do(func() {
		l.end.inflight.Wait()
		l.mu.Lock()
		deleting := l.deleting
		l.mu.Unlock()
		if deleting {
			l.end.deleteErr = l.s.submit(&request{op: opDelete, key: l.key})
		}
		l.s.release(l.key)
	})
}
