package oplog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"
)

// journaled is the bbolt backend with the journal (journal.go) in front
// of its commits: a batch is durable once its record is synced to the
// journal, and is folded into bbolt, with the records before it, when the
// journal is full, before a read of a log it wrote, and at close; the
// journal then starts again. Opening replays into bbolt the records it
// does not hold yet (a crash's), by their seq, which bbolt keeps with
// the entries they wrote ("journal"/"applied"), in the same transaction.
type journaled struct {
	b *boltBackend

	// mu is held across a record's write and sync, and across a fold:
	// commit and the reads that fold are one at a time.
	mu      sync.Mutex
	j       *journalFile
	pending []journalBatch // records synced, not yet in bbolt, in order
	// present are the logs as bbolt and the pending records have them,
	// by key (a key without a log is not in it), so that commit refuses
	// what bbolt's apply would before it is written.
	present map[string]logState
	applied uint64 // the seq of the last record bbolt holds
	broken  error  // a record's write or sync failed: its outcome is unknown
}

// logState is what present knows of a log.
type logState uint8

const (
	noLog  logState = iota // none of the key (in a batch's staged: deleted)
	noID                   // its bucket lacks its id (errNoID)
	usable                 // appends may go to it
)

// journalBatch is one record's requests.
type journalBatch struct {
	seq  uint64
	reqs []*request
}

var (
	journalBucket = []byte("journal")
	appliedKey    = []byte("applied")
)

// openJournaled puts the journal at b.path+"-journal" in front of b, and
// folds into b the records of the journal it lacks.
func openJournaled(b *boltBackend) (*journaled, error) {
	jb := &journaled{b: b, present: map[string]logState{}}
	err := b.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(journalBucket).Get(appliedKey); len(v) == 8 {
			jb.applied = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	j, recs, err := openJournal(b.path + "-journal")
	if err != nil {
		return nil, err
	}
	jb.j = j
	if len(recs) > 0 && recs[0].seq > jb.applied+1 {
		// Records past a gap: this journal does not follow the file (a
		// file put back from an older copy, or removed). Folding them
		// would write entries after ones that are missing.
		b.log.Warn("journal not applied: its first record does not follow the last one the oplog file holds (the file was replaced?)",
			zap.String("file", j.path), zap.Uint64("first", recs[0].seq), zap.Uint64("applied", jb.applied))
		recs = nil
	}
	j.next = max(j.next, jb.applied+1)
	for _, rec := range recs {
		if rec.seq <= jb.applied {
			continue
		}
		reqs, err := decodeJournalBatch(rec.payload)
		if err != nil {
			// Its checksum held: this is no torn write but a bug.
			j.close()
			return nil, fmt.Errorf("journal %s: record %d: %w", j.path, rec.seq, err)
		}
		jb.pending = append(jb.pending, journalBatch{seq: rec.seq, reqs: reqs})
	}
	if n := len(jb.pending); n > 0 {
		b.log.Info("journal replayed", zap.String("file", j.path), zap.Int("records", n))
	}
	if err := jb.foldLocked(); err != nil {
		j.close()
		return nil, err
	}
	if err := j.restart(); err != nil {
		j.close()
		return nil, fmt.Errorf("journal %s: %w", j.path, err)
	}
	err = b.view(func(root *bolt.Bucket) error {
		return root.ForEachBucket(func(k []byte) error {
			jb.present[string(k)] = noID
			if _, ok := logID(root.Bucket(k)); ok {
				jb.present[string(k)] = usable
			}
			return nil
		})
	})
	if err != nil {
		j.close()
		return nil, err
	}
	return jb, nil
}

// commit validates batch, writes what passes as one journal record and
// syncs it. A batch too large for the journal is committed to bbolt
// directly, after the pending records.
func (jb *journaled) commit(batch []*request, errs []error) int {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	if jb.broken != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = jb.broken
			}
		}
		return 0
	}
	// staged is what the batch's requests make of the logs they name,
	// put into present once the batch is written.
	staged := map[string]logState{}
	state := func(key string) logState {
		if st, ok := staged[key]; ok {
			return st
		}
		return jb.present[key]
	}
	var reqs []*request
	for i, r := range batch {
		if errs[i] != nil {
			continue
		}
		switch st := state(r.key); r.op {
		case opAppend:
			switch st {
			case noLog:
				errs[i] = errors.New("the log is not in the file")
			case noID:
				errs[i] = errNoID
			}
		case opCreate:
			if st != noLog {
				errs[i] = errors.New("the log is already in the file")
			} else {
				staged[r.key] = usable
			}
		case opDelete:
			staged[r.key] = noLog
		}
		if errs[i] == nil {
			reqs = append(reqs, r)
		}
	}
	if len(reqs) == 0 {
		return 0
	}
	fail := func(err error) int {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return 0
	}
	written := func() int {
		for key, st := range staged {
			if st == noLog {
				delete(jb.present, key)
			} else {
				jb.present[key] = st
			}
		}
		return 1
	}
	payload := appendJournalBatch(nil, reqs)
	if !journalRoom(len(payload)) {
		if err := jb.foldLocked(); err != nil {
			return fail(fmt.Errorf("commit: %w", err))
		}
		sub := make([]error, len(reqs))
		if err := jb.b.update(reqs, sub, nil); err != nil {
			return fail(fmt.Errorf("commit: %w", err))
		}
		scatter(batch, errs, reqs, sub)
		return written()
	}
	if !jb.j.fits(len(payload)) {
		if err := jb.foldLocked(); err != nil {
			return fail(fmt.Errorf("commit: %w", err))
		}
		if err := jb.j.restart(); err != nil {
			jb.broken = fmt.Errorf("journal %s: %w", jb.j.path, err)
			return fail(jb.broken)
		}
	}
	seq, err := jb.j.write(payload)
	if err != nil {
		// The record may be on the disk or not: nothing more is written.
		jb.broken = fmt.Errorf("journal %s: %w", jb.j.path, err)
		jb.b.log.Error("journal write failed", zap.String("file", jb.j.path), zap.Error(err))
		return fail(jb.broken)
	}
	jb.pending = append(jb.pending, journalBatch{seq: seq, reqs: reqs})
	return written()
}

// scatter copies the errors sub of reqs, which are the requests of batch
// whose errs were nil, in order, into errs.
func scatter(batch []*request, errs []error, reqs []*request, sub []error) {
	k := 0
	for i := range batch {
		if k < len(reqs) && batch[i] == reqs[k] {
			errs[i] = sub[k]
			k++
		}
	}
}

// foldLocked writes the pending records into bbolt, in one transaction
// that also records the last one's seq (jb.mu held). A request bbolt
// refuses (which commit's checks should make impossible) is logged: its
// log then misses that entry, which its Open reports as corrupt.
func (jb *journaled) foldLocked() error {
	if len(jb.pending) == 0 {
		return nil
	}
	var reqs []*request
	for _, p := range jb.pending {
		reqs = append(reqs, p.reqs...)
	}
	last := jb.pending[len(jb.pending)-1].seq
	errs := make([]error, len(reqs))
	err := jb.b.update(reqs, errs, func(tx *bolt.Tx) error {
		return tx.Bucket(journalBucket).Put(appliedKey, binary.BigEndian.AppendUint64(nil, last))
	})
	if err != nil {
		return fmt.Errorf("fold the journal into %s: %w", jb.b.path, err)
	}
	for i, e := range errs {
		if e != nil {
			jb.b.log.Error("journal entry refused by bbolt", zap.String("file", jb.b.path), zap.String("key", reqs[i].key), zap.Uint64("seq", reqs[i].seq), zap.Error(e))
		}
	}
	jb.applied, jb.pending = last, nil
	return nil
}

// fold writes the pending records into bbolt if any writes key ("": any).
func (jb *journaled) fold(key string) error {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	if key != "" && !jb.writes(key) {
		return nil
	}
	return jb.foldLocked()
}

// writes reports whether a pending record writes the log key (jb.mu
// held): a read folds only then. Reads are an instance's start and an
// operator's, the pending records at most a journal's worth.
func (jb *journaled) writes(key string) bool {
	for _, p := range jb.pending {
		for _, r := range p.reqs {
			if r.key == key {
				return true
			}
		}
	}
	return false
}

func (jb *journaled) read(key string) (*stored, error) {
	if err := jb.fold(key); err != nil {
		return nil, err
	}
	return jb.b.read(key)
}

func (jb *journaled) keys() ([]string, error) {
	if err := jb.fold(""); err != nil {
		return nil, err
	}
	return jb.b.keys()
}

func (jb *journaled) summaries() ([]Summary, error) {
	if err := jb.fold(""); err != nil {
		return nil, err
	}
	return jb.b.summaries()
}

// close folds the journal into bbolt and closes both: the bbolt file then
// holds everything (a fold that fails leaves the journal for the next
// Open to replay).
func (jb *journaled) close() error {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	err := jb.foldLocked()
	if err != nil {
		jb.b.log.Error("journal not folded at close; the next open replays it", zap.String("file", jb.j.path), zap.Error(err))
	}
	return errors.Join(err, jb.j.close(), jb.b.close())
}

// appendJournalBatch encodes reqs as a record's payload: their count,
// then each request's op, key, seq and value.
func appendJournalBatch(b []byte, reqs []*request) []byte {
	b = binary.AppendUvarint(b, uint64(len(reqs)))
	for _, r := range reqs {
		b = append(b, byte(r.op))
		b = appendBytes(b, r.key)
		b = binary.AppendUvarint(b, r.seq)
		b = appendBytes(b, r.value)
	}
	return b
}

// decodeJournalBatch decodes appendJournalBatch's payload.
func decodeJournalBatch(b []byte) ([]*request, error) {
	uv := func() (uint64, error) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, errors.New("bad varint")
		}
		b = b[n:]
		return v, nil
	}
	bs := func() ([]byte, error) {
		n, err := uv()
		if err != nil {
			return nil, err
		}
		if n > uint64(len(b)) {
			return nil, errors.New("a value past the record's end")
		}
		v := b[:n:n]
		b = b[n:]
		return v, nil
	}
	count, err := uv()
	if err != nil {
		return nil, err
	}
	if count > uint64(len(b)) {
		return nil, errors.New("more requests than bytes")
	}
	reqs := make([]*request, 0, count)
	for range count {
		if len(b) == 0 {
			return nil, errors.New("the record ends early")
		}
		r := &request{op: op(b[0])}
		b = b[1:]
		if r.op > opDelete {
			return nil, fmt.Errorf("unknown op %d", r.op)
		}
		key, err := bs()
		if err != nil {
			return nil, err
		}
		r.key = string(key)
		if r.seq, err = uv(); err != nil {
			return nil, err
		}
		if r.value, err = bs(); err != nil {
			return nil, err
		}
		reqs = append(reqs, r)
	}
	if len(b) != 0 {
		return nil, errors.New("bytes after the last request")
	}
	return reqs, nil
}
