package oplog

// The stored encodings. An entry's value is
//
//	version  1 byte, codecVersion
//	kind     1 byte
//	seq      uvarint
//	at       varint, Unix ns
//	call     uvarint length, bytes
//	digest   uvarint length, bytes
//	data     uvarint length, bytes
//	crc      4 bytes big-endian: CRC-32C of all the bytes before it
//
// and a header's is
//
//	version  1 byte, codecVersion
//	component uvarint length, bytes
//	started  varint Unix s, uvarint ns (< 1e9)
//	crc      4 bytes, as above
//
// Varints must be minimal and nothing may follow the last field, so a value
// has one encoding: decoding then encoding gives back the same bytes.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/bits"
	"time"
)

const (
	codecVersion = 1
	crcSize      = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendEntry appends e's encoding to b.
func appendEntry(b []byte, e *Entry) []byte {
	start := len(b)
	b = append(b, codecVersion, byte(e.Kind))
	b = binary.AppendUvarint(b, e.Seq)
	b = binary.AppendVarint(b, e.At.UnixNano())
	b = appendBytes(b, e.Call)
	b = appendBytes(b, e.Digest)
	b = appendBytes(b, e.Data)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
}

// decodeEntry decodes an entry's value. Its Digest and Data are slices of b.
func decodeEntry(b []byte) (Entry, error) {
	d, err := open(b)
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	e.Kind = Kind(d.byte("kind"))
	e.Seq = d.uvarint("seq")
	at := d.varint("time")
	e.Call = string(d.bytes("call"))
	e.Digest = d.bytes("digest")
	e.Data = d.bytes("data")
	if err := d.end(); err != nil {
		return Entry{}, err
	}
	switch {
	case !e.Kind.valid():
		return Entry{}, fmt.Errorf("%s is not a kind of entry", e.Kind)
	case e.Seq == 0:
		return Entry{}, errors.New("seq 0")
	case len(e.Digest) > maxDigest:
		return Entry{}, fmt.Errorf("digest of %d bytes", len(e.Digest))
	}
	e.At = time.Unix(0, at).UTC()
	return e, nil
}

// appendHeader appends h's encoding to b.
func appendHeader(b []byte, h Header) []byte {
	start := len(b)
	b = append(b, codecVersion)
	b = appendBytes(b, h.Component)
	b = binary.AppendVarint(b, h.Started.Unix())
	b = binary.AppendUvarint(b, uint64(h.Started.Nanosecond()))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
}

// decodeHeader decodes a header's value.
func decodeHeader(b []byte) (Header, error) {
	d, err := open(b)
	if err != nil {
		return Header{}, err
	}
	var h Header
	h.Component = string(d.bytes("component"))
	sec := d.varint("time")
	nsec := d.uvarint("time")
	if err := d.end(); err != nil {
		return Header{}, err
	}
	if nsec >= 1e9 {
		return Header{}, fmt.Errorf("time of %d ns past the second", nsec)
	}
	h.Started = time.Unix(sec, int64(nsec)).UTC()
	return h, nil
}

// appendBytes appends v with its length before it.
func appendBytes[T string | []byte](b []byte, v T) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// decoder reads the fields of a value; the first error sticks.
type decoder struct {
	b   []byte // what is left
	err error
}

// open checks b's version and checksum and returns a decoder of the fields
// between them.
func open(b []byte) (*decoder, error) {
	if len(b) < 1+crcSize {
		return nil, fmt.Errorf("value of %d bytes", len(b))
	}
	if b[0] != codecVersion {
		return nil, fmt.Errorf("unknown encoding version %d", b[0])
	}
	n := len(b) - crcSize
	if got, want := crc32.Checksum(b[:n], castagnoli), binary.BigEndian.Uint32(b[n:]); got != want {
		return nil, fmt.Errorf("checksum mismatch (stored %08x, computed %08x)", want, got)
	}
	return &decoder{b: b[1:n]}, nil
}

func (d *decoder) fail(what, why string) {
	if d.err == nil {
		d.err = fmt.Errorf("%s: %s", what, why)
	}
	d.b = nil
}

func (d *decoder) byte(what string) byte {
	if len(d.b) == 0 {
		d.fail(what, "missing")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b)
	switch {
	case n == 0:
		d.fail(what, "missing")
		return 0
	case n < 0:
		d.fail(what, "varint overflows 64 bits")
		return 0
	case n != (bits.Len64(x|1)+6)/7:
		d.fail(what, "varint not minimal")
		return 0
	}
	d.b = d.b[n:]
	return x
}

// varint is a zig-zag varint, as binary.AppendVarint writes it.
func (d *decoder) varint(what string) int64 {
	ux := d.uvarint(what)
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

// bytes is a length-prefixed field: a slice of the value (nil if empty),
// capped so that appending to it cannot overwrite what follows.
func (d *decoder) bytes(what string) []byte {
	n := d.uvarint(what)
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(what, fmt.Sprintf("length %d past the end", n))
		return nil
	}
	if n == 0 {
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// end is the decoder's error, or an error if bytes are left over.
func (d *decoder) end() error {
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%d bytes after the last field", len(d.b))
	}
	return d.err
}
