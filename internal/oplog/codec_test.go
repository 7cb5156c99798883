package oplog

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"
	"time"
)

// seal is body (from the version byte on) with its checksum.
func seal(body ...byte) []byte {
	return binary.BigEndian.AppendUint32(body, crc32.Checksum(body, castagnoli))
}

func FuzzDecodeEntry(f *testing.F) {
	for i := range 4 {
		e := testEntry(i)
		e.Seq, e.At = uint64(i+1), time.Unix(0, int64(i)*1e15+7)
		f.Add(appendEntry(nil, &e), uint8(i), uint64(i), int64(i), e.Call, e.Digest, e.Data)
	}
	f.Add([]byte{}, uint8(0), uint64(0), int64(-1), "", []byte(nil), []byte(nil))
	f.Add(seal(codecVersion, 1, 0x81, 0x00, 0, 0, 0, 0), uint8(9), uint64(1<<63), int64(-1<<63), "\xff", make([]byte, 64), []byte{0})
	f.Fuzz(func(t *testing.T, raw []byte, kind uint8, seq uint64, at int64, call string, digest, data []byte) {
		// Whatever raw is, decoding does not panic; what decodes
		// encodes back to raw.
		if e, err := decodeEntry(raw); err == nil {
			if again := appendEntry(nil, &e); !bytes.Equal(again, raw) {
				t.Fatalf("decoded %+v from %x, which encodes to %x", e, raw, again)
			}
		}
		// A valid entry round-trips.
		want := Entry{Seq: seq | 1, Kind: Kind(kind%3 + 1), Call: call, Digest: digest, Data: data, At: time.Unix(0, at).UTC()}
		if len(want.Digest) > maxDigest {
			want.Digest = want.Digest[:maxDigest]
		}
		b := appendEntry(nil, &want)
		got, err := decodeEntry(b)
		if err != nil {
			t.Fatalf("decode of %+v: %v", want, err)
		}
		if err := sameEntry(got, want); err != nil || !got.At.Equal(want.At) {
			t.Fatalf("round trip: %+v, want %+v (%v)", got, want, err)
		}
	})
}

func TestDecodeEntryErrors(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"short", []byte{codecVersion, 1, 2}, "value of 3 bytes"},
		{"version 2", seal(2, 1, 1, 0, 0, 0, 0), "unknown encoding version 2"},
		{"checksum", append(seal(codecVersion, 1, 1, 0, 0, 0, 0)[:7], 0, 0, 0, 0), "checksum mismatch"},
		{"no kind", seal(codecVersion), "kind: missing"},
		{"varint not minimal", seal(codecVersion, 1, 0x81, 0x00, 0, 0, 0, 0), "seq: varint not minimal"},
		{"varint overflows", seal(codecVersion, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0), "seq: varint overflows"},
		{"length past the end", seal(codecVersion, 1, 1, 0, 5, 'a'), "call: length 5 past the end"},
		{"no data", seal(codecVersion, 1, 1, 0, 0, 0), "data: missing"},
		{"trailing", seal(codecVersion, 1, 1, 0, 0, 0, 0, 9), "1 bytes after the last field"},
		{"seq 0", seal(codecVersion, 1, 0, 0, 0, 0, 0), "seq 0"},
		{"kind 0", seal(codecVersion, 0, 1, 0, 0, 0, 0), "kind(0) is not a kind"},
		{"digest too long", seal(append([]byte{codecVersion, 1, 1, 0, 0, 65}, make([]byte, 66)...)...), "digest of 65 bytes"},
	}
	for _, tt := range tests {
		if _, err := decodeEntry(tt.b); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: decode: %v, want %q", tt.name, err, tt.want)
		}
	}
	if _, err := decodeEntry(seal(codecVersion, 1, 1, 0, 0, 0, 0)); err != nil {
		t.Errorf("decode of the least entry: %v", err)
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range []Header{
		{},
		testHeader,
		{Component: strings.Repeat("ab", 32), Started: time.Date(1969, 7, 20, 20, 17, 40, 1, time.UTC)},
		{Component: "c", Started: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
	} {
		got, err := decodeHeader(appendHeader(nil, h))
		if err != nil || got != h {
			t.Errorf("round trip of %+v: %+v, %v", h, got, err)
		}
	}
	if _, err := decodeHeader(seal(codecVersion, 0, 0, 0x80, 0x94, 0xeb, 0xdc, 0x03)); err == nil || !strings.Contains(err.Error(), "past the second") {
		t.Errorf("decode of a header of 1e9 ns: %v", err)
	}
}
