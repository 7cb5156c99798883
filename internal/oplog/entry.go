package oplog

import (
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// Limits on what a log holds, in bytes.
const (
	maxKey    = 512 // a log's key
	maxDigest = 64  // an entry's Digest
)

// Header is what a log records once, at its start.
type Header struct {
	Component string    // the component's content digest (hex)
	Started   time.Time // when the instance started; kept to the ns, in UTC
}

// Kind says what an entry records.
type Kind uint8

// The kinds of entry.
const (
	// KindResult: a host call and the result the guest got.
	KindResult Kind = 1
	// KindStarted: a call with an outside effect, recorded before it is
	// issued.
	KindStarted Kind = 2
	// KindCompleted: that call's result.
	KindCompleted Kind = 3
	// KindMessage: a message the instance accepted, recorded before the
	// sender is answered (it is not a call: replay walks past it).
	KindMessage Kind = 4
	// KindMessageEnd: the reply to such a message ended.
	KindMessageEnd Kind = 5
)

// String is the kind's name: "result", "started", "completed",
// "message", "message-end", or
// "kind(N)" for a value that is none of them.
func (k Kind) String() string {
	switch k {
	case KindResult:
		return "result"
	case KindStarted:
		return "started"
	case KindCompleted:
		return "completed"
	case KindMessage:
		return "message"
	case KindMessageEnd:
		return "message-end"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// valid reports whether k is one of the kinds.
func (k Kind) valid() bool { return k >= KindResult && k <= KindMessageEnd }

// Entry is one record of a log.
type Entry struct {
	Seq    uint64    // assigned by Append: 1, 2, 3 … per log
	Kind   Kind      // what the entry records
	Call   string    // the host function, e.g. "toolhost:agent/tooling@0.3.0#[method]tooling.call-tool"
	Digest []byte    // digest of the call's arguments (opaque, at most 64 bytes)
	Data   []byte    // the encoded result (opaque)
	At     time.Time // when it was appended (set by Append; UTC, to the ns)
}

// checkEntry is what Append requires of an entry it is given.
func (s *Store) checkEntry(e *Entry) error {
	if !e.Kind.valid() {
		return fmt.Errorf("entry of %s: not a kind of entry", e.Kind)
	}
	if len(e.Digest) > maxDigest {
		return fmt.Errorf("entry digest of %d bytes: the limit is %d", len(e.Digest), maxDigest)
	}
	// The encoding adds at most 1+1+10+10+3*10+4 bytes to these.
	if n := len(e.Call) + len(e.Digest) + len(e.Data) + 56; n > s.lim.maxEntry {
		return fmt.Errorf("entry of about %d bytes: %s is %d", n, s.lim.name, s.lim.maxEntry)
	}
	return nil
}

// checkKey is what a log's key must be.
func checkKey(key string) error {
	switch {
	case key == "":
		return errors.New("empty log key")
	case len(key) > maxKey:
		return fmt.Errorf("log key of %d bytes: the limit is %d", len(key), maxKey)
	case !utf8.ValidString(key):
		return fmt.Errorf("log key %q is not valid UTF-8", key)
	}
	return nil
}
