package wasmtime

// Kind is the kind of a Val; its values are the C API's
// WASMTIME_COMPONENT_* value kinds.
type Kind uint8

// Value kinds.
const (
	KindBool Kind = iota
	KindS8
	KindU8
	KindS16
	KindU16
	KindS32
	KindU32
	KindS64
	KindU64
	KindF32
	KindF64
	KindChar
	KindString
	KindList
	KindRecord
	KindTuple
	KindVariant
	KindEnum
	KindOption
	KindResult
	KindFlags
	KindResource
)

var kindNames = [...]string{"bool", "s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64", "f32", "f64",
	"char", "string", "list", "record", "tuple", "variant", "enum", "option", "result", "flags", "resource"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Val is a component-model value: one of Bool, S8, U8, S16, U16, S32, U32,
// S64, U64, F32, F64, Char, String, List (or Bytes), Record, Tuple, Variant, Enum,
// Option, Result, Flags, ResourceHost or *ResourceAny. Build values with
// conversions (U32(7), String("x")) and match them with a type switch.
//
// Values carry no type: the callee's signature decides. A value of the wrong
// shape is rejected by wasmtime with an error, not a crash. Strings, chars,
// enum/variant/flag names must be valid UTF-8 / Unicode scalar values.
type Val interface {
	Kind() Kind
}

type (
	Bool   bool
	S8     int8
	U8     uint8
	S16    int16
	U16    uint16
	S32    int32
	U32    uint32
	S64    int64
	U64    uint64
	F32    float32
	F64    float64
	Char   rune
	String string
	// List holds the elements of a list<T>.
	List []Val
	// Record holds a record's fields in declaration order.
	Record []Field
	// Tuple holds a tuple's elements.
	Tuple []Val
	// Enum is the name of an enum case.
	Enum string
	// Flags lists the names of the flags that are set.
	Flags []string
)

// Bytes is a list<u8> given as its bytes, for the host to pass to the
// guest: it is lowered in one pass, with no Val per byte (a List of U8
// costs an interface value per byte and converts element by element).
// Values lifted from wasmtime are always a List.
type Bytes []byte

// Field is one record field.
type Field struct {
	Name string
	Val  Val
}

// Variant is a variant case with an optional payload (nil: none).
type Variant struct {
	Case    string
	Payload Val
}

// Option is option<T>: Some == nil is none.
type Option struct{ Some Val }

// Result is result<T, E>: Err selects the case; Payload is nil when that
// case has no payload.
type Result struct {
	Err     bool
	Payload Val
}

// ResourceHost is a resource whose type was defined by the host
// (NewResourceType). Rep is the host's own 32-bit representation; Owned
// distinguishes own<T> from borrow<T>.
//
// Ownership: an owned ResourceHost passed to the guest moves ownership to
// the guest (wasmtime calls the type's destructor when the guest drops it).
// An owned ResourceHost received from the guest (argument of a host function
// or result of a call) is the host's to dispose of; wasmtime will not call
// the destructor for it. A borrowed ResourceHost received in a host function
// is valid only during that call; the binding releases the borrow.
type ResourceHost struct {
	Type  uint32
	Rep   uint32
	Owned bool
}

func (Bool) Kind() Kind         { return KindBool }
func (S8) Kind() Kind           { return KindS8 }
func (U8) Kind() Kind           { return KindU8 }
func (S16) Kind() Kind          { return KindS16 }
func (U16) Kind() Kind          { return KindU16 }
func (S32) Kind() Kind          { return KindS32 }
func (U32) Kind() Kind          { return KindU32 }
func (S64) Kind() Kind          { return KindS64 }
func (U64) Kind() Kind          { return KindU64 }
func (F32) Kind() Kind          { return KindF32 }
func (F64) Kind() Kind          { return KindF64 }
func (Char) Kind() Kind         { return KindChar }
func (String) Kind() Kind       { return KindString }
func (List) Kind() Kind         { return KindList }
func (Bytes) Kind() Kind        { return KindList }
func (Record) Kind() Kind       { return KindRecord }
func (Tuple) Kind() Kind        { return KindTuple }
func (Variant) Kind() Kind      { return KindVariant }
func (Enum) Kind() Kind         { return KindEnum }
func (Option) Kind() Kind       { return KindOption }
func (Result) Kind() Kind       { return KindResult }
func (Flags) Kind() Kind        { return KindFlags }
func (ResourceHost) Kind() Kind { return KindResource }

// Get returns the value of the field named name, or nil.
func (r Record) Get(name string) Val {
	for _, f := range r {
		if f.Name == name {
			return f.Val
		}
	}
	return nil
}

// Ok returns a successful result.
func Ok(v Val) Result { return Result{Payload: v} }

// Err returns a failed result.
func Err(v Val) Result { return Result{Err: true, Payload: v} }

// Some returns option some(v).
func Some(v Val) Option { return Option{Some: v} }

// None is option none.
var None = Option{}
