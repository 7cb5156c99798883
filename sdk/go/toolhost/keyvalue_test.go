package toolhost

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

// The wasi:keyvalue types, as in wit/deps/keyvalue.
var (
	tNone        = abiType{kind: "none"}
	tU64         = abiType{kind: "u64"}
	wKVError     = variant(tNone, tNone, tString)
	wKeyResponse = record(tList, option(tString))
	wKVPair      = record(tString, tList) // tuple<string, list<u8>>
	wCASError    = variant(wKVError, tU32)
)

func TestKVLayout(t *testing.T) {
	check := layoutCheck(t)
	check("sizeKVError", sizeKVError, wKVError.size())
	check("offKVErrorVal", offKVErrorVal, wKVError.payloadOffset())
	check("sizeOptBytes", sizeOptBytes, option(tList).size())
	check("offOptBytesVal", offOptBytesVal, option(tList).payloadOffset())
	check("sizeKeyResponse", sizeKeyResponse, wKeyResponse.size())
	if o := wKeyResponse.offsets(); !reflect.DeepEqual(o, []uint32{offKRKeys, offKRCursor}) {
		t.Errorf("key-response offsets %v", o)
	}
	check("sizeKVPair", sizeKVPair, wKVPair.size())
	if o := wKVPair.offsets(); !reflect.DeepEqual(o, []uint32{offKVKey, offKVValue}) {
		t.Errorf("tuple<string, list<u8>> offsets %v", o)
	}
	check("sizeOptPair", sizeOptPair, option(wKVPair).size())
	check("offOptPair", offOptPair, option(wKVPair).payloadOffset())
	for _, r := range []struct {
		name string
		ok   abiType
	}{
		{"result<own<bucket>, error>", tU32},
		{"result<option<list<u8>>, error>", option(tList)},
		{"result<_, error>", tNone},
		{"result<bool, error>", tU8},
		{"result<list<option<tuple<string, list<u8>>>>, error>", tList},
	} {
		ty := result(r.ok, wKVError)
		check(r.name+" size", sizeKVResult, ty.size())
		check(r.name+" payload offset", offResultVal, ty.payloadOffset())
	}
	check("sizeKVResultKeys", sizeKVResultKeys, result(wKeyResponse, wKVError).size())
	check("sizeKVResultS64", sizeKVResultS64, result(tU64, wKVError).size())
	check("offKVResultS64Val", offKVResultS64Val, result(tU64, wKVError).payloadOffset())
	check("sizeCASError", sizeCASError, wCASError.size())
	check("offCASErrorVal", offCASErrorVal, wCASError.payloadOffset())
	check("sizeKVResultCASErr", sizeKVResultCASErr, result(tNone, wCASError).size())
	largest := uint32(max(sizeKVResult, sizeKVResultKeys, sizeKVResultS64, sizeKVResultCASErr))
	check("sizeLargestKVResult", sizeLargestKVResult, largest)
	if sizeLargestKVResult > sizeLargestReturnArea {
		t.Errorf("the return area (%d bytes) cannot hold a key-value result (%d)", sizeLargestReturnArea, sizeLargestKVResult)
	}
}

func TestLiftKV(t *testing.T) {
	m := &fakeMemory{}

	// result<s64, error>: the payload at 8, negative numbers intact.
	ty := result(tU64, wKVError)
	area := m.alloc(ty.size(), ty.align())
	want := int64(-(1<<40 - 3))
	binary.LittleEndian.PutUint64(m.b[area+offKVResultS64Val:], uint64(want))
	n, err := liftKVResult(m, area, offKVResultS64Val, liftS64)
	if err != nil || n != want {
		t.Fatalf("s64 lifted as %d, %v", n, err)
	}
	m.b[area] = 1
	errAt := area + ty.payloadOffset()
	m.b[errAt] = 2
	m.str(errAt+offKVErrorVal, "quota max_keys of agent a exceeded")
	_, err = liftKVResult(m, area, offKVResultS64Val, liftS64)
	var se *StoreError
	if !errors.As(err, &se) || !errors.Is(err, StoreOther) || se.Message != "quota max_keys of agent a exceeded" {
		t.Fatalf("error lifted as %v", err)
	}
	for code, target := range []StoreErrorCode{NoSuchStore, AccessDenied} {
		m.b[errAt] = uint8(code)
		_, err = liftKVResult(m, area, offKVResultS64Val, liftS64)
		if !errors.Is(err, target) || errors.Is(err, StoreOther) || err.Error() != target.String() {
			t.Errorf("case %d lifted as %v", code, err)
		}
	}

	// option<list<u8>>: none, an empty value, bytes.
	opt := m.alloc(sizeOptBytes, 4)
	if v := liftOptBytes(m, opt); v != nil {
		t.Errorf("none lifted as %v", v)
	}
	m.b[opt] = 1
	if v := liftOptBytes(m, opt); v == nil || len(v) != 0 {
		t.Errorf("an empty value lifted as %#v", v)
	}
	m.str(opt+offOptBytesVal, "\x00\xffv")
	if v := liftOptBytes(m, opt); string(v) != "\x00\xffv" {
		t.Errorf("bytes lifted as %q", v)
	}

	// list<option<tuple<string, list<u8>>>>.
	elems := m.alloc(2*sizeOptPair, 4)
	m.b[elems+sizeOptPair] = 1
	m.str(elems+sizeOptPair+offOptPair+offKVKey, "k")
	m.str(elems+sizeOptPair+offOptPair+offKVValue, "v")
	l := m.alloc(sizeString, 4)
	m.put32(l, elems)
	m.put32(l+4, 2)
	got := liftList(m, l, sizeOptPair, liftOptPair)
	if len(got) != 2 || got[0] != nil || got[1] == nil || got[1].Key != "k" || string(got[1].Value) != "v" {
		t.Errorf("get-many lifted as %+v", got)
	}

	// key-response.
	kr := m.alloc(sizeKeyResponse, 4)
	keys := m.alloc(2*sizeString, 4)
	m.str(keys, "a")
	m.str(keys+sizeString, "b")
	m.put32(kr+offKRKeys, keys)
	m.put32(kr+offKRKeys+4, 2)
	m.optStr(kr+offKRCursor, ptr("b"))
	if r := liftKeyResponse(m, kr); !reflect.DeepEqual(r.keys, []string{"a", "b"}) || r.cursor == nil || *r.cursor != "b" {
		t.Errorf("key-response lifted as %+v", r)
	}

	// swap's result<_, cas-error>.
	sw := m.alloc(sizeKVResultCASErr, 4)
	if o := liftSwap(m, sw); o != (swapOutcome{}) {
		t.Errorf("ok lifted as %+v", o)
	}
	m.b[sw] = 1
	m.b[sw+offResultVal] = caseCASFailed
	m.put32(sw+offResultVal+offCASErrorVal, 9)
	if o := liftSwap(m, sw); !o.failed || o.cas != 9 || o.err != nil {
		t.Errorf("cas-failed lifted as %+v", o)
	}
	m.b[sw+offResultVal] = caseCASStoreError
	m.b[sw+offResultVal+offCASErrorVal] = uint8(AccessDenied)
	if o := liftSwap(m, sw); o.failed || o.err == nil || o.err.Code != AccessDenied {
		t.Errorf("store-error lifted as %+v", o)
	}
}

// TestLowerKV: set-many's list of (key, value) tuples and get-many's list
// of keys as the host reads them after placement.
func TestLowerKV(t *testing.T) {
	kvs := []KeyValue{{Key: "a", Value: []byte{0, 1}}, {Key: "bc", Value: nil}}
	l := lowerListBlock(kvs, sizeKVPair, lowerKVPair)
	const base = 4096
	m := &fakeMemory{b: make([]byte, base+len(l.buf))}
	l.place(m.b[base:], base)
	elems, n := u32(m, base+offPtr), u32(m, base+offLen)
	if n != 2 {
		t.Fatalf("%d elements", n)
	}
	for i, kv := range kvs {
		at := elems + uint32(i)*sizeKVPair
		if k := liftString(m, at+offKVKey); k != kv.Key {
			t.Errorf("key %d = %q", i, k)
		}
		if v := liftBytes(m, at+offKVValue); string(v) != string(kv.Value) {
			t.Errorf("value %d = %v", i, v)
		}
	}
	keys := lowerListBlock([]string{"x", "yz"}, sizeString, lowerString)
	m = &fakeMemory{b: make([]byte, base+len(keys.buf))}
	keys.place(m.b[base:], base)
	if got := liftList(m, base, sizeString, liftString); !reflect.DeepEqual(got, []string{"x", "yz"}) {
		t.Errorf("keys = %q", got)
	}
}
