package toolhost

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestHostErrorIs(t *testing.T) {
	err := fmt.Errorf("get: %w", &HostError{Code: Denied, Message: "not granted"})
	if !errors.Is(err, Denied) || errors.Is(err, NotFound) {
		t.Errorf("errors.Is on %v: Denied %v NotFound %v", err, errors.Is(err, Denied), errors.Is(err, NotFound))
	}
	if err.Error() != "get: denied: not granted" {
		t.Errorf("message %q", err.Error())
	}
	for i, name := range codeNames {
		if ErrorCode(i).String() != name {
			t.Errorf("code %d is %q, want %q", i, ErrorCode(i), name)
		}
	}
	if Internal.String() != "internal" || ErrorCode(10).String() != "error-code(10)" {
		t.Errorf("code names: %s %s", Internal, ErrorCode(10))
	}
}

func TestArgumentsJSON(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{nil, "{}"},
		{"not json", "not json"},
		{[]byte(`{"a":1}`), `{"a":1}`},
		{json.RawMessage(`{"b":2}`), `{"b":2}`},
		{map[string]any{"text": "hi"}, `{"text":"hi"}`},
		{struct {
			N int `json:"n"`
		}{3}, `{"n":3}`},
	} {
		got, err := argumentsJSON("t", tc.in)
		if err != nil || got != tc.want {
			t.Errorf("argumentsJSON(%#v) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := argumentsJSON("t", func() {}); err == nil {
		t.Error("a func marshalled")
	}
}

func TestResultHelpers(t *testing.T) {
	r := &ToolResult{Name: "echo", Value: `{"content":[{"type":"text","text":"a"},{"type":"image","data":"AA=="},{"type":"text","text":"b"}],"isError":true}`}
	c, err := r.Result()
	if err != nil || c.Text() != "a b" || !c.IsError || len(c.Content) != 3 {
		t.Fatalf("Result() = %+v, %v", c, err)
	}
	var raw map[string]any
	if err := r.Decode(&raw); err != nil || raw["isError"] != true {
		t.Fatalf("Decode: %v %v", raw, err)
	}
	bin := &ResourceContent{MIMEType: ptr("application/octet-stream"), Content: "AAH/"}
	if b, err := bin.Bytes(); err != nil || string(b) != "\x00\x01\xff" || bin.IsText() {
		t.Errorf("binary content: %q %v", b, err)
	}
	txt := &ResourceContent{Content: "plain"}
	if b, err := txt.Bytes(); err != nil || string(b) != "plain" || !txt.IsText() {
		t.Errorf("text content: %q %v", b, err)
	}
}

func TestTimeoutMS(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want uint32
	}{{0, 0}, {time.Microsecond, 1}, {time.Millisecond, 1}, {1500 * time.Microsecond, 2}, {time.Second, 1000}, {1 << 62, 1<<32 - 1}} {
		if got := timeoutMS(tc.d); got != tc.want {
			t.Errorf("timeoutMS(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
}

func TestLevels(t *testing.T) {
	for l, want := range []string{"debug", "info", "warn", "error"} {
		if Level(l).String() != want {
			t.Errorf("level %d is %s", l, Level(l))
		}
	}
}

func TestBump(t *testing.T) {
	const base, limit = 1000, 96
	var used uint32
	for i, s := range []struct{ align, size, want uint32 }{
		{1, 3, 1000},  // offset 0
		{4, 8, 1004},  // aligned up from 3
		{8, 1, 1016},  // from 12 to 16
		{4, 80, 0},    // 20 + 80 > 96: refused, nothing taken
		{4, 76, 1020}, // exactly to the limit
		{1, 1, 0},     // full
		{0, 0, 1096},  // an empty block fits at the end
	} {
		if got := bump(base, limit, &used, s.align, s.size); got != s.want {
			t.Fatalf("step %d: bump(align %d, size %d) = %d, want %d (used %d)", i, s.align, s.size, got, s.want, used)
		}
	}
}
