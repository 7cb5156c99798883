package toolhost

// The canonical ABI of the wasi:keyvalue@0.2.0-draft2 values that cross
// linear memory (keyvalue.go uses them), by the rules of layout.go;
// layout_test.go recomputes the constants. Every record, option, result
// and variant here has alignment 4 except result<s64, error>, whose s64
// makes it 8.

// variant error { no-such-store, access-denied, other(string) }.
const (
	sizeKVError   = 12
	offKVErrorVal = 4 // other's string
)

// option<list<u8>>: a discriminant, then the list at 4.
const (
	sizeOptBytes   = 12
	offOptBytesVal = 4
)

// record key-response { keys: list<string>, cursor: option<string> }.
const (
	sizeKeyResponse = 20
	offKRKeys       = 0
	offKRCursor     = 8
)

// tuple<string, list<u8>>, and option<tuple<string, list<u8>>> (get-many's
// elements).
const (
	sizeKVPair  = 16
	offKVKey    = 0
	offKVValue  = 8
	sizeOptPair = 20
	offOptPair  = 4
)

// result<T, error>: T at offResultVal (4), except for T = s64 at 8; swap's
// result<_, cas-error> holds variant cas-error { store-error(error),
// cas-failed(own<cas>) } at 4, whose payload is at 4 again.
const (
	sizeKVResult        = 16 // result<own<_>, error>, result<option<list<u8>>, error>, result<_, error>, result<bool, error>, result<list<_>, error>
	sizeKVResultKeys    = 24 // result<key-response, error>
	sizeKVResultS64     = 24 // result<s64, error>
	offKVResultS64Val   = 8
	sizeCASError        = 16
	offCASErrorVal      = 4
	sizeKVResultCASErr  = 20
	caseCASStoreError   = 0
	caseCASFailed       = 1
	numKVErrorCases     = 3
	caseKVOther         = 2
	sizeLargestKVResult = 24
)

// liftKVError reads wasi:keyvalue's error variant at addr.
func liftKVError(m memory, addr uint32) *StoreError {
	code := liftEnum(m, addr, numKVErrorCases, "keyvalue error")
	e := &StoreError{Code: StoreErrorCode(code)}
	if code == caseKVOther {
		e.Message = liftString(m, addr+offKVErrorVal)
	}
	return e
}

// liftKVResult reads a result<T, error> at addr whose payload (either
// case's) is at off, lifting the ok one with ok.
func liftKVResult[T any](m memory, addr, off uint32, ok func(memory, uint32) T) (T, error) {
	var zero T
	switch d := u8(m, addr+offResultDisc); d {
	case 0:
		return ok(m, addr+off), nil
	case 1:
		return zero, liftKVError(m, addr+off)
	default:
		panic(abiError("result discriminant", d))
	}
}

// liftBytes reads the (ptr, len) of a list<u8> at addr and copies the
// bytes out (an empty list is an empty, non-nil slice).
func liftBytes(m memory, addr uint32) []byte {
	ptr, n := u32(m, addr+offPtr), u32(m, addr+offLen)
	b := make([]byte, n)
	copy(b, m.load(ptr, n))
	return b
}

// liftOptBytes reads an option<list<u8>>: nil for none.
func liftOptBytes(m memory, addr uint32) []byte {
	switch d := u8(m, addr); d {
	case 0:
		return nil
	case 1:
		return liftBytes(m, addr+offOptBytesVal)
	default:
		panic(abiError("option discriminant", d))
	}
}

func liftKeyResponse(m memory, addr uint32) keyResponse {
	return keyResponse{
		keys:   liftList(m, addr+offKRKeys, sizeString, liftString),
		cursor: liftOptString(m, addr+offKRCursor),
	}
}

// keyResponse is record key-response.
type keyResponse struct {
	keys   []string
	cursor *string
}

// liftOptPair reads an option<tuple<string, list<u8>>>: nil for none.
func liftOptPair(m memory, addr uint32) *KeyValue {
	switch d := u8(m, addr); d {
	case 0:
		return nil
	case 1:
		p := addr + offOptPair
		return &KeyValue{Key: liftString(m, p+offKVKey), Value: liftBytes(m, p+offKVValue)}
	default:
		panic(abiError("option discriminant", d))
	}
}

func liftS64(m memory, addr uint32) int64 {
	return int64(uint64(u32(m, addr)) | uint64(u32(m, addr+4))<<32)
}

// swapOutcome is swap's result<_, cas-error>: nil, a *StoreError, or the
// handle of the fresh cas of cas-failed.
type swapOutcome struct {
	err    *StoreError
	failed bool
	cas    uint32
}

func liftSwap(m memory, addr uint32) swapOutcome {
	switch d := u8(m, addr+offResultDisc); d {
	case 0:
		return swapOutcome{}
	case 1:
	default:
		panic(abiError("result discriminant", d))
	}
	v := addr + offResultVal
	switch d := u8(m, v); d {
	case caseCASStoreError:
		return swapOutcome{err: liftKVError(m, v+offCASErrorVal)}
	case caseCASFailed:
		return swapOutcome{failed: true, cas: u32(m, v+offCASErrorVal)}
	default:
		panic(abiError("cas-error discriminant", d))
	}
}

// lowerBytes lays out a list<u8> at at.
func (l *lowerer) bytes(at uint32, b []byte) {
	off := l.alloc(uint32(len(b)), 1)
	copy(l.buf[off:], b)
	l.ptrLen(at, off, uint32(len(b)))
}

func lowerKVPair(l *lowerer, at uint32, kv *KeyValue) {
	l.string(at+offKVKey, kv.Key)
	l.bytes(at+offKVValue, kv.Value)
}

// lowerListBlock lays out a list of xs as the block's first (ptr, len)
// pair followed by its elements; listArg places it.
func lowerListBlock[T any](xs []T, elem uint32, f func(*lowerer, uint32, *T)) *lowerer {
	l := &lowerer{}
	at := l.alloc(sizeString, 8)
	lowerList(l, at, xs, elem, f)
	return l
}
