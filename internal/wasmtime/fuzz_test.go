package wasmtime

import (
	"encoding/binary"
	"math"
	"testing"
	"unicode/utf8"
)

// valDecoder builds an arbitrary Val tree from fuzz bytes.
type valDecoder struct{ b []byte }

func (d *valDecoder) byte() byte {
	if len(d.b) == 0 {
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *valDecoder) u64() uint64 {
	var buf [8]byte
	n := copy(buf[:], d.b)
	d.b = d.b[n:]
	return binary.LittleEndian.Uint64(buf[:])
}

func (d *valDecoder) str() string {
	n := int(d.byte()) % 48
	if n > len(d.b) {
		n = len(d.b)
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *valDecoder) val(depth int) Val {
	k := d.byte() % 21
	if depth > 4 {
		k %= 13
	}
	n := int(d.byte() % 5)
	switch k {
	case 0:
		return Bool(d.byte()&1 == 1)
	case 1:
		return S8(d.byte())
	case 2:
		return U8(d.byte())
	case 3:
		return S16(d.u64())
	case 4:
		return U16(d.u64())
	case 5:
		return S32(d.u64())
	case 6:
		return U32(d.u64())
	case 7:
		return S64(d.u64())
	case 8:
		return U64(d.u64())
	case 9:
		return F32(math.Float32frombits(uint32(d.u64())))
	case 10:
		return F64(math.Float64frombits(d.u64()))
	case 11:
		return Char(rune(uint32(d.u64()) % 0x110800))
	case 12:
		return String(d.str())
	case 13:
		l := make(List, n)
		for i := range l {
			l[i] = d.val(depth + 1)
		}
		return l
	case 14:
		r := make(Record, n)
		for i := range r {
			r[i] = Field{Name: d.str(), Val: d.val(depth + 1)}
		}
		return r
	case 15:
		t := make(Tuple, n)
		for i := range t {
			t[i] = d.val(depth + 1)
		}
		return t
	case 16:
		v := Variant{Case: d.str()}
		if d.byte()&1 == 1 {
			v.Payload = d.val(depth + 1)
		}
		return v
	case 17:
		return Enum(d.str())
	case 18:
		if d.byte()&1 == 1 {
			return Some(d.val(depth + 1))
		}
		return None
	case 19:
		r := Result{Err: d.byte()&1 == 1}
		if d.byte()&1 == 1 {
			r.Payload = d.val(depth + 1)
		}
		return r
	default:
		f := make(Flags, n)
		for i := range f {
			f[i] = d.str()
		}
		return f
	}
}

// validVal reports whether v can cross to wasmtime (valid UTF-8 strings
// and names, Unicode scalar chars).
func validVal(v Val) bool {
	switch x := v.(type) {
	case Char:
		return utf8.ValidRune(rune(x))
	case String:
		return utf8.ValidString(string(x))
	case Enum:
		return utf8.ValidString(string(x))
	case List:
		for _, e := range x {
			if !validVal(e) {
				return false
			}
		}
	case Tuple:
		for _, e := range x {
			if !validVal(e) {
				return false
			}
		}
	case Record:
		for _, f := range x {
			if !utf8.ValidString(f.Name) || !validVal(f.Val) {
				return false
			}
		}
	case Variant:
		return utf8.ValidString(x.Case) && (x.Payload == nil || validVal(x.Payload))
	case Option:
		return x.Some == nil || validVal(x.Some)
	case Result:
		return x.Payload == nil || validVal(x.Payload)
	case Flags:
		for _, n := range x {
			if !utf8.ValidString(n) {
				return false
			}
		}
	}
	return true
}

// FuzzValueConversion checks Go value → C value → Go value is the identity
// for valid values and an error (never a crash) for invalid ones.
func FuzzValueConversion(f *testing.F) {
	for _, seed := range [][]byte{
		{},
		{12, 0, 5, 'h', 'e', 'l', 'l', 'o'},
		{13, 3, 6, 0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 0, 2, 0xff, 0xfe},
		{14, 2, 3, 'a', 'b', 'c', 18, 0, 1, 19, 0, 1, 1, 12, 0, 2, 0xc3, 0xbc},
		{16, 0, 4, 'c', 'a', 's', 'e', 1, 20, 2, 1, 'x', 1, 'y'},
		{11, 0, 0, 0xd8, 0, 0, 0, 0, 0, 0},
		{15, 4, 9, 0, 0, 0, 0xc0, 0x7f, 0, 0, 0, 0, 10, 0, 1, 0, 0, 0, 0, 0, 0xf8, 0x7f},
	} {
		f.Add(seed)
	}
	e, err := NewEngine(EngineConfig{})
	if err != nil {
		f.Fatal(err)
	}
	defer e.Close()
	s, err := NewStore(e, StoreConfig{})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	f.Fuzz(func(t *testing.T, data []byte) {
		d := &valDecoder{b: data}
		v := d.val(0)
		out, err := s.roundTrip(v)
		if !validVal(v) {
			if err == nil {
				t.Fatalf("invalid value %s converted", short(v))
			}
			return
		}
		if err != nil {
			t.Fatalf("round trip of %s: %v", short(v), err)
		}
		if !valEqual(out, v) {
			t.Fatalf("round trip changed %s into %s", short(v), short(out))
		}
	})
}
