package host

// The encoding of component values in a durable agent's oplog (journal.go):
// a host call's results as the guest got them, and its arguments as the
// digest that replay compares. A kind byte, then the payload: varints for
// integers, length-prefixed bytes for strings and names, counts for lists.

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// Value tags; their numbers are stored: never renumber one.
const (
	tagBool byte = iota + 1
	tagS8
	tagU8
	tagS16
	tagU16
	tagS32
	tagU32
	tagS64
	tagU64
	tagF32
	tagF64
	tagChar
	tagString
	tagList
	tagBytes
	tagRecord
	tagTuple
	tagVariant
	tagEnum
	tagOption
	tagResult
	tagFlags
	tagResource // a host resource, in a digest only: never in a result
	tagNil      // an absent payload (a case, a result side, none)
)

// maxDepth bounds the nesting decodeVal follows.
const maxDepth = 64

// errNotRecordable is a result the oplog cannot hold (a resource handle:
// the call must be re-run in replay, not answered from the oplog).
var errNotRecordable = errors.New("value cannot be recorded")

// appendVal appends v's encoding to b. Resources are encoded (type and
// rep) only with digest set.
func appendVal(b []byte, v wt.Val, digest bool) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, tagNil), nil
	case wt.Bool:
		if x {
			return append(b, tagBool, 1), nil
		}
		return append(b, tagBool, 0), nil
	case wt.S8:
		return binary.AppendVarint(append(b, tagS8), int64(x)), nil
	case wt.U8:
		return append(b, tagU8, byte(x)), nil
	case wt.S16:
		return binary.AppendVarint(append(b, tagS16), int64(x)), nil
	case wt.U16:
		return binary.AppendUvarint(append(b, tagU16), uint64(x)), nil
	case wt.S32:
		return binary.AppendVarint(append(b, tagS32), int64(x)), nil
	case wt.U32:
		return binary.AppendUvarint(append(b, tagU32), uint64(x)), nil
	case wt.S64:
		return binary.AppendVarint(append(b, tagS64), int64(x)), nil
	case wt.U64:
		return binary.AppendUvarint(append(b, tagU64), uint64(x)), nil
	case wt.F32:
		return binary.LittleEndian.AppendUint32(append(b, tagF32), math.Float32bits(float32(x))), nil
	case wt.F64:
		return binary.LittleEndian.AppendUint64(append(b, tagF64), math.Float64bits(float64(x))), nil
	case wt.Char:
		return binary.AppendUvarint(append(b, tagChar), uint64(x)), nil
	case wt.String:
		return appendBytes(append(b, tagString), string(x)), nil
	case wt.Enum:
		return appendBytes(append(b, tagEnum), string(x)), nil
	case wt.Bytes:
		return appendBytes(append(b, tagBytes), string(x)), nil
	case wt.List:
		return appendVals(append(b, tagList), x, digest)
	case wt.Tuple:
		return appendVals(append(b, tagTuple), x, digest)
	case wt.Record:
		b = binary.AppendUvarint(append(b, tagRecord), uint64(len(x)))
		var err error
		for _, f := range x {
			b = appendBytes(b, f.Name)
			if b, err = appendVal(b, f.Val, digest); err != nil {
				return nil, err
			}
		}
		return b, nil
	case wt.Variant:
		return appendVal(appendBytes(append(b, tagVariant), x.Case), x.Payload, digest)
	case wt.Option:
		return appendVal(append(b, tagOption), x.Some, digest)
	case wt.Result:
		side := byte(0)
		if x.Err {
			side = 1
		}
		return appendVal(append(b, tagResult, side), x.Payload, digest)
	case wt.Flags:
		b = binary.AppendUvarint(append(b, tagFlags), uint64(len(x)))
		for _, f := range x {
			b = appendBytes(b, f)
		}
		return b, nil
	case wt.ResourceHost:
		if !digest {
			return nil, fmt.Errorf("%w: a resource handle", errNotRecordable)
		}
		owned := byte(0)
		if x.Owned {
			owned = 1
		}
		b = binary.AppendUvarint(append(b, tagResource), uint64(x.Type))
		return append(binary.AppendUvarint(b, uint64(x.Rep)), owned), nil
	}
	return nil, fmt.Errorf("%w: a %T", errNotRecordable, v)
}

func appendVals(b []byte, vs []wt.Val, digest bool) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(vs)))
	var err error
	for _, v := range vs {
		if b, err = appendVal(b, v, digest); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func appendBytes(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// encodeResults is the oplog data of a call's results.
func encodeResults(results []wt.Val) ([]byte, error) {
	return appendVals(nil, results, false)
}

// digestCall is what replay compares a call with: the function and its
// arguments (resource handles by type and rep, which a replay re-creates
// in the same order).
func digestCall(call string, args []wt.Val) []byte {
	b := appendBytes(make([]byte, 0, 64), call)
	b, err := appendVals(b, args, true)
	if err != nil {
		// Every argument a host function is given is encodable: a
		// *ResourceAny is never one of the host's imports' parameters.
		b = append(b, err.Error()...)
	}
	sum := sha256.Sum256(b)
	return sum[:16]
}

// errBadRecord is an oplog entry whose data does not decode.
var errBadRecord = errors.New("recorded value does not decode")

// decodeResults decodes encodeResults' data into results, which must have
// as many elements as were recorded.
func decodeResults(data []byte, results []wt.Val) error {
	d := valDecoder{b: data}
	n := d.count()
	if d.err == nil && int(n) != len(results) {
		return fmt.Errorf("%w: %d results recorded, the call has %d", errBadRecord, n, len(results))
	}
	for i := range results {
		results[i] = d.val(0)
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d bytes left over", errBadRecord, len(d.b))
	}
	return d.err
}

// valDecoder reads values; its first error sticks.
type valDecoder struct {
	b   []byte
	err error
}

func (d *valDecoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errBadRecord, what)
	}
	d.b = nil
}

func (d *valDecoder) byte1() byte {
	if len(d.b) == 0 {
		d.fail("truncated")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *valDecoder) uvarint() uint64 {
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *valDecoder) varint() int64 {
	x, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return x
}

// count reads a length that must fit in what is left (each element takes
// at least a byte).
func (d *valDecoder) count() uint64 {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("count past the end")
		return 0
	}
	return n
}

func (d *valDecoder) str() string {
	n := d.count()
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *valDecoder) fixed(n int) []byte {
	if len(d.b) < n {
		d.fail("truncated")
		return make([]byte, n)
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *valDecoder) vals(depth int) []wt.Val {
	n := d.count()
	vs := make([]wt.Val, n)
	for i := range vs {
		vs[i] = d.val(depth + 1)
	}
	return vs
}

func (d *valDecoder) val(depth int) wt.Val {
	if depth > maxDepth {
		d.fail("nested too deep")
		return nil
	}
	if d.err != nil {
		return nil
	}
	switch tag := d.byte1(); tag {
	case tagNil:
		return nil
	case tagBool:
		return wt.Bool(d.byte1() != 0)
	case tagS8:
		return wt.S8(d.varint())
	case tagU8:
		return wt.U8(d.byte1())
	case tagS16:
		return wt.S16(d.varint())
	case tagU16:
		return wt.U16(d.uvarint())
	case tagS32:
		return wt.S32(d.varint())
	case tagU32:
		return wt.U32(d.uvarint())
	case tagS64:
		return wt.S64(d.varint())
	case tagU64:
		return wt.U64(d.uvarint())
	case tagF32:
		return wt.F32(math.Float32frombits(binary.LittleEndian.Uint32(d.fixed(4))))
	case tagF64:
		return wt.F64(math.Float64frombits(binary.LittleEndian.Uint64(d.fixed(8))))
	case tagChar:
		return wt.Char(rune(d.uvarint()))
	case tagString:
		return wt.String(d.str())
	case tagEnum:
		return wt.Enum(d.str())
	case tagBytes:
		return wt.Bytes(d.str())
	case tagList:
		return wt.List(d.vals(depth))
	case tagTuple:
		return wt.Tuple(d.vals(depth))
	case tagRecord:
		n := d.count()
		r := make(wt.Record, n)
		for i := range r {
			r[i].Name = d.str()
			r[i].Val = d.val(depth + 1)
		}
		return r
	case tagVariant:
		c := d.str()
		return wt.Variant{Case: c, Payload: d.val(depth + 1)}
	case tagOption:
		return wt.Option{Some: d.val(depth + 1)}
	case tagResult:
		side := d.byte1()
		return wt.Result{Err: side != 0, Payload: d.val(depth + 1)}
	case tagFlags:
		n := d.count()
		f := make(wt.Flags, n)
		for i := range f {
			f[i] = d.str()
		}
		return f
	default:
		d.fail(fmt.Sprintf("unknown tag %d", tag))
		return nil
	}
}
