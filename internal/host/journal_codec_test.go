package host

import (
	"errors"
	"reflect"
	"testing"

	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// codecValues are values of every kind the host's imports return.
var codecValues = []wt.Val{
	wt.Bool(true), wt.Bool(false), wt.S8(-8), wt.U8(200), wt.S16(-300), wt.U16(60000),
	wt.S32(-70000), wt.U32(4000000000), wt.S64(-1 << 60), wt.U64(1 << 63), wt.F32(1.5), wt.F64(-2.25),
	wt.Char('é'), wt.String(""), wt.String("héllo"), wt.Enum("info"), wt.Bytes("\x00\x01\xff"),
	wt.List{wt.String("a"), wt.U32(1)}, wt.List{}, wt.Tuple{wt.Bool(true), wt.String("x")},
	wt.Record{{Name: "id", Val: wt.String("u")}, {Name: "event", Val: wt.Variant{Case: "shutdown"}}},
	wt.Variant{Case: "tool-result", Payload: wt.Record{{Name: "value", Val: wt.String("{}")}}},
	wt.Some(wt.U32(7)), wt.None, wt.Ok(nil), wt.Err(wt.String("no")), wt.Ok(wt.List{wt.Some(wt.Bytes("v"))}),
	wt.Flags{"a", "b"}, wt.Flags{},
}

// TestResultsRoundTrip: every kind a host import returns is recorded and
// read back as it was.
func TestResultsRoundTrip(t *testing.T) {
	for _, v := range codecValues {
		data, err := encodeResults([]wt.Val{v})
		if err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		got := make([]wt.Val, 1)
		if err := decodeResults(data, got); err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		if !reflect.DeepEqual(got[0], v) {
			t.Errorf("round trip of %#v gave %#v", v, got[0])
		}
	}
	if err := decodeResults([]byte{0}, nil); err != nil {
		t.Errorf("no results: %v", err)
	}
}

// TestResultsRefuseResources: a handle is never recorded (the call that
// makes one is re-run in replay), and a count that does not match the
// call's results is an error, not a short answer.
func TestResultsRefuseResources(t *testing.T) {
	if _, err := encodeResults([]wt.Val{wt.Ok(wt.ResourceHost{Type: 1, Rep: 2, Owned: true})}); !errors.Is(err, errNotRecordable) {
		t.Errorf("a resource was recorded: %v", err)
	}
	data, _ := encodeResults([]wt.Val{wt.U32(1)})
	if err := decodeResults(data, make([]wt.Val, 2)); !errors.Is(err, errBadRecord) {
		t.Errorf("1 result into 2: %v", err)
	}
}

// TestDigestCall: the digest tells calls apart by function and by every
// argument, resource handles included.
func TestDigestCall(t *testing.T) {
	self := wt.ResourceHost{Type: toolingType, Rep: 1}
	base := digestCall("f", []wt.Val{self, wt.String("a"), wt.String("{}")})
	for name, d := range map[string][]byte{
		"function": digestCall("g", []wt.Val{self, wt.String("a"), wt.String("{}")}),
		"argument": digestCall("f", []wt.Val{self, wt.String("b"), wt.String("{}")}),
		"handle":   digestCall("f", []wt.Val{wt.ResourceHost{Type: toolingType, Rep: 2}, wt.String("a"), wt.String("{}")}),
		"split":    digestCall("f", []wt.Val{self, wt.String("a{"), wt.String("}")}),
	} {
		if string(d) == string(base) {
			t.Errorf("another %s, the same digest", name)
		}
	}
	if again := digestCall("f", []wt.Val{self, wt.String("a"), wt.String("{}")}); string(again) != string(base) {
		t.Error("the same call, another digest")
	}
}

// FuzzDecodeResults: no input makes the decoder panic or loop, and what
// decodes encodes back to the same bytes.
func FuzzDecodeResults(f *testing.F) {
	for _, v := range codecValues {
		data, _ := encodeResults([]wt.Val{v})
		f.Add(data)
	}
	f.Add([]byte{1, tagList, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		got := make([]wt.Val, 1)
		if err := decodeResults(data, got); err != nil {
			return
		}
		again, err := encodeResults(got)
		if err != nil {
			t.Fatalf("decoded %#v does not encode: %v", got[0], err)
		}
		back := make([]wt.Val, 1)
		if err := decodeResults(again, back); err != nil || !reflect.DeepEqual(back, got) {
			t.Fatalf("re-encoded %#v decodes to %#v (%v)", got, back, err)
		}
	})
}
