package oplog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// The journal: a file beside the bbolt file (its path and "-journal") in
// front of it. A batch is made durable by writing it as one record at the
// journal's end and syncing that write (one fdatasync of a region already
// written, so no metadata to journal), where a bbolt commit syncs twice
// (its pages, then its meta page). The records are folded into bbolt
// later, in one transaction of many (journaled.go), after which the
// journal starts again from its beginning.
//
// The file is journalSize bytes, written with zeros when it is made, so
// that a record's write changes no block allocation or file size. Its
// first journalHeaderSize bytes are the header: "THJ1", the generation
// (8 bytes, big-endian; one more at each start again), the seq of its
// first record (8 bytes), a CRC-32C of those 20 bytes. The records follow,
// each: its payload's length (4 bytes), a CRC-32C of the generation, the
// seq and the payload (4 bytes), the generation (8 bytes), the seq (8
// bytes), the payload. A record is read only if it is of the header's
// generation, has the next seq and its checksum holds: what follows the
// last record written (zeros, a torn write, an earlier generation's
// records) ends the scan.

const (
	journalSize       = 1 << 20
	journalHeaderSize = 4096 // the records start on a block of their own
	journalRecordHead = 24
	journalMagic      = "THJ1"
)

// journalFile is the journal's file and where its next record goes.
type journalFile struct {
	f    *os.File
	path string
	gen  uint64 // the header's generation
	next uint64 // the seq of the next record
	off  int64  // where the next record goes
}

// journalRecord is one record read back.
type journalRecord struct {
	seq     uint64
	payload []byte
}

// openJournal opens (making it if missing, journalSize bytes of zeros)
// the journal at path and returns it with the records of its generation,
// in order. A header that does not verify (a file just made, or a start
// again torn by a crash) is an empty journal: the journal starts again
// only once all it held is in bbolt.
func openJournal(path string) (*journalFile, []journalRecord, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, err
	}
	j := &journalFile{f: f, path: path}
	recs, err := j.load()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("journal %s: %w", path, err)
	}
	return j, recs, nil
}

// load zero-fills the file to journalSize if it is shorter, and reads its
// header and records.
func (j *journalFile) load() ([]journalRecord, error) {
	fi, err := j.f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() < journalSize {
		if _, err := j.f.WriteAt(make([]byte, journalSize-fi.Size()), fi.Size()); err != nil {
			return nil, err
		}
		if err := j.f.Sync(); err != nil {
			return nil, err
		}
		if fi.Size() == 0 {
			// A file just made: its directory's entry must survive too.
			if err := syncDir(filepath.Dir(j.path)); err != nil {
				return nil, err
			}
		}
	}
	buf := make([]byte, journalSize)
	if _, err := io.ReadFull(io.NewSectionReader(j.f, 0, journalSize), buf); err != nil {
		return nil, err
	}
	gen, first, ok := parseJournalHeader(buf[:journalHeaderSize])
	if !ok {
		j.off = journalHeaderSize
		return nil, nil
	}
	j.gen, j.next = gen, first
	recs, end := scanJournal(buf, gen, first)
	j.off = end
	if len(recs) > 0 {
		j.next = recs[len(recs)-1].seq + 1
	}
	return recs, nil
}

// parseJournalHeader reads a journal header: ok if it verifies.
func parseJournalHeader(b []byte) (gen, first uint64, ok bool) {
	if len(b) < 24 || string(b[:4]) != journalMagic {
		return 0, 0, false
	}
	if crc32.Checksum(b[:20], castagnoli) != binary.BigEndian.Uint32(b[20:24]) {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(b[4:12]), binary.BigEndian.Uint64(b[12:20]), true
}

// scanJournal reads the records of generation gen in buf (a whole
// journal), the first of seq first, up to the first that is not one; end
// is where the next record goes.
func scanJournal(buf []byte, gen, first uint64) (recs []journalRecord, end int64) {
	off := int64(journalHeaderSize)
	want := first
	for off+journalRecordHead <= int64(len(buf)) {
		h := buf[off : off+journalRecordHead]
		n := int64(binary.BigEndian.Uint32(h[0:4]))
		if off+journalRecordHead+n > int64(len(buf)) {
			break
		}
		if binary.BigEndian.Uint64(h[8:16]) != gen || binary.BigEndian.Uint64(h[16:24]) != want {
			break
		}
		body := buf[off+8 : off+journalRecordHead+n]
		if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(h[4:8]) {
			break
		}
		recs = append(recs, journalRecord{seq: want, payload: body[16:]})
		want++
		off += journalRecordHead + n
	}
	return recs, off
}

// fits reports whether a record of n payload bytes fits after the last.
func (j *journalFile) fits(n int) bool {
	return j.off+journalRecordHead+int64(n) <= journalSize
}

// journalRoom reports whether a record of n payload bytes fits an empty
// journal.
func journalRoom(n int) bool {
	return journalHeaderSize+journalRecordHead+int64(n) <= journalSize
}

// write appends payload as the next record and syncs it: once it
// returns, the record survives a crash. It returns the record's seq.
func (j *journalFile) write(payload []byte) (uint64, error) {
	if !j.fits(len(payload)) {
		return 0, errors.New("the record does not fit the journal")
	}
	seq := j.next
	b := make([]byte, journalRecordHead, journalRecordHead+len(payload))
	binary.BigEndian.PutUint32(b[0:4], uint32(len(payload)))
	binary.BigEndian.PutUint64(b[8:16], j.gen)
	binary.BigEndian.PutUint64(b[16:24], seq)
	b = append(b, payload...)
	binary.BigEndian.PutUint32(b[4:8], crc32.Checksum(b[8:], castagnoli))
	if _, err := j.f.WriteAt(b, j.off); err != nil {
		return 0, err
	}
	if err := datasync(j.f); err != nil {
		return 0, err
	}
	j.off += int64(len(b))
	j.next++
	return seq, nil
}

// restart starts the journal again from its beginning, in the next
// generation, its first record of seq j.next; the caller has made sure
// bbolt holds every record written. Until the new header is synced, a
// crash leaves the old one (whose records bbolt holds) or a torn one (an
// empty journal).
func (j *journalFile) restart() error {
	gen := j.gen + 1
	h := make([]byte, 0, 24)
	h = append(h, journalMagic...)
	h = binary.BigEndian.AppendUint64(h, gen)
	h = binary.BigEndian.AppendUint64(h, j.next)
	h = binary.BigEndian.AppendUint32(h, crc32.Checksum(h, castagnoli))
	if _, err := j.f.WriteAt(h, 0); err != nil {
		return err
	}
	if err := datasync(j.f); err != nil {
		return err
	}
	j.gen, j.off = gen, journalHeaderSize
	return nil
}

func (j *journalFile) close() error { return j.f.Close() }

// syncDir syncs the directory dir: the entries made in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
