package host

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/tooling"
	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// chatRequestVal lowers req as a guest's chat-request arrives (the host
// never lowers one: this is the inverse chatRequestFrom is checked
// against).
func chatRequestVal(req provider.Request) wt.Val {
	opt := func(ok bool, v wt.Val) wt.Val {
		if !ok {
			return wt.None
		}
		return wt.Some(v)
	}
	msgs := make(wt.List, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = messageVal(m)
	}
	tools := make(wt.List, len(req.Tools))
	for i, t := range req.Tools {
		tools[i] = toolVal(t)
	}
	var choice wt.Val = wt.None
	if tc := req.ToolChoice; tc != nil {
		v := wt.Variant{Case: choiceCases[tc.Mode]}
		if tc.Mode == provider.ToolChoiceNamed {
			v.Payload = wt.String(tc.Name)
		}
		choice = wt.Some(v)
	}
	stop := make(wt.List, len(req.Stop))
	for i, s := range req.Stop {
		stop[i] = wt.String(s)
	}
	var maxTokens, temp wt.Val = wt.None, wt.None
	if req.MaxTokens != nil {
		maxTokens = wt.Some(wt.U32(*req.MaxTokens))
	}
	if req.Temperature != nil {
		temp = wt.Some(wt.F32(*req.Temperature))
	}
	return wt.Record{
		{Name: "model", Val: opt(req.Model != "", wt.String(req.Model))},
		{Name: "messages", Val: msgs},
		{Name: "tools", Val: tools},
		{Name: "tool-choice", Val: choice},
		{Name: "max-tokens", Val: maxTokens},
		{Name: "temperature", Val: temp},
		{Name: "stop", Val: stop},
	}
}

// fuzzBytes hands out the fuzzer's bytes as small numbers and strings.
type fuzzBytes struct{ b []byte }

func (f *fuzzBytes) n(limit int) int {
	if len(f.b) == 0 {
		return 0
	}
	v := int(f.b[0]) % limit
	f.b = f.b[1:]
	return v
}

func (f *fuzzBytes) str() string {
	n := min(f.n(16), len(f.b))
	s := string(f.b[:n])
	f.b = f.b[n:]
	return s
}

func (f *fuzzBytes) request() provider.Request {
	var req provider.Request
	if f.n(2) == 1 {
		req.Model = "m" + f.str()
	}
	for range f.n(4) {
		m := provider.Message{Role: provider.Role(f.n(4)), Content: f.str()}
		for range f.n(3) {
			m.ToolCalls = append(m.ToolCalls, provider.ToolCall{ID: f.str(), Name: f.str(), Arguments: f.str()})
		}
		if f.n(2) == 1 {
			m.ToolCallID = "c" + f.str()
		}
		req.Messages = append(req.Messages, m)
	}
	for range f.n(3) {
		t := tooling.Tool{Name: f.str(), InputSchema: f.str()}
		if f.n(2) == 1 {
			d := f.str()
			t.Description = &d
		}
		req.Tools = append(req.Tools, t)
	}
	if c := f.n(5); c > 0 {
		req.ToolChoice = &provider.ToolChoice{Mode: provider.ToolChoiceMode(c - 1)}
		if req.ToolChoice.Mode == provider.ToolChoiceNamed {
			req.ToolChoice.Name = f.str()
		}
	}
	if f.n(2) == 1 {
		n := uint32(f.n(256)) << 8
		req.MaxTokens = &n
	}
	if f.n(2) == 1 {
		x := float32(f.n(256)) / 64
		req.Temperature = &x
	}
	for range f.n(3) {
		req.Stop = append(req.Stop, f.str())
	}
	return req
}

// corrupt replaces the node of v numbered k (depth first) with a value of
// another shape, reporting whether it found one.
func corrupt(v wt.Val, k *int) (wt.Val, bool) {
	if *k == 0 {
		if _, isStr := v.(wt.String); isStr {
			return wt.U32(1), true
		}
		return wt.String("x"), true
	}
	*k--
	switch x := v.(type) {
	case wt.Record:
		out := append(wt.Record(nil), x...)
		for i := range out {
			if nv, ok := corrupt(out[i].Val, k); ok {
				out[i].Val = nv
				return out, true
			}
		}
	case wt.List:
		out := append(wt.List(nil), x...)
		for i := range out {
			if nv, ok := corrupt(out[i], k); ok {
				out[i] = nv
				return out, true
			}
		}
	case wt.Option:
		if x.Some != nil {
			if nv, ok := corrupt(x.Some, k); ok {
				return wt.Some(nv), true
			}
		}
	case wt.Variant:
		if x.Payload != nil {
			if nv, ok := corrupt(x.Payload, k); ok {
				return wt.Variant{Case: x.Case, Payload: nv}, true
			}
		}
	}
	return v, false
}

// FuzzChatConversion: a chat-request lifts back to the request it was
// lowered from, and a chat-response lowers to what lifts back as the same
// response; a value with any node of the wrong shape is refused with
// errBadArgs, never a panic.
func FuzzChatConversion(f *testing.F) {
	f.Add([]byte{1, 3, 'g', 'p', 't', 2, 1, 2, 'h', 'i', 1, 1, 'a', 1, 'b', 2, '{', '}', 0, 1, 1, 't', 1, 4, 4, 't', 1, 1, 200, 1, 64, 1, 1, 'x', 7})
	f.Add([]byte{0, 3, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 5})
	f.Fuzz(func(t *testing.T, data []byte) {
		fb := &fuzzBytes{b: data}
		req := fb.request()
		v := chatRequestVal(req)
		got, err := chatRequestFrom(v)
		if err != nil {
			t.Fatalf("lift of a well-formed request: %v", err)
		}
		if !reflect.DeepEqual(got, req) {
			t.Fatalf("round trip changed\n%+v\ninto\n%+v", req, got)
		}
		k := fb.n(64)
		if bad, ok := corrupt(v, &k); ok {
			if _, err := chatRequestFrom(bad); !errors.Is(err, errBadArgs) {
				t.Fatalf("a corrupted request lifted: err = %v", err)
			}
		}

		var resp provider.Response
		if len(req.Messages) > 0 {
			resp.Message = req.Messages[0]
		}
		resp.FinishReason = provider.FinishReason(fb.n(5))
		resp.Usage = provider.Usage{InputTokens: uint32(fb.n(256)) * 1000, OutputTokens: math.MaxUint32 - uint32(fb.n(256))}
		resp.Model = fb.str()
		rv := chatResponseVal(resp)
		rf, err := fields("chat-response", rv, "message", "finish-reason", "usage", "model")
		if err != nil {
			t.Fatal(err)
		}
		msg, err := messageFrom(rf["message"])
		if err != nil {
			t.Fatalf("lift of a lowered message: %v", err)
		}
		if !reflect.DeepEqual(msg, resp.Message) || rf["finish-reason"] != wt.Enum(finishCases[resp.FinishReason]) ||
			rf["model"] != wt.String(resp.Model) {
			t.Fatalf("response %+v lowered to %v", resp, rv)
		}
	})
}
