package toolhost

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func f32bits(f float32) uint32 { return math.Float32bits(f) }

func sampleRequest() *ChatRequest {
	return &ChatRequest{
		Model: ptr("gpt-test"),
		Messages: []Message{
			SystemMessage("be brief"),
			UserMessage("what is 2+2? ünïcödé"),
			{Role: RoleAssistant, Content: "", ToolCalls: []ToolCall{{ID: "call_1", Name: "math.add", Arguments: `{"a":2,"b":2}`}, {ID: "c2", Name: "x/y", Arguments: "{}"}}},
			ToolMessage("call_1", "4"),
		},
		Tools:       []Tool{{Name: "math.add", Description: ptr("adds"), InputSchema: `{"type":"object"}`}, {Name: "x/y", InputSchema: "{}"}},
		ToolChoice:  ChooseTool("math.add"),
		MaxTokens:   Ptr[uint32](256),
		Temperature: Ptr[float32](0.25),
		Stop:        []string{"\n\n", "END"},
	}
}

// lowerAt lowers chat's parameters for self and r into a fake memory at
// base and reads them back by the ABI's rules.
func lowerAt(t testing.TB, self uint32, r *ChatRequest, base uint32) any {
	t.Helper()
	l := lowerChatParams(self, r)
	m := &fakeMemory{b: make([]byte, base+uint32(len(l.buf))+8)}
	l.place(m.b[base:], base)
	return readTree(m, base, tChatParams)
}

func TestLowerChatRequest(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  *ChatRequest
	}{
		{"full", sampleRequest()},
		{"empty", &ChatRequest{}},
		{"options only", &ChatRequest{ToolChoice: &ToolChoice{Kind: ToolChoiceRequired}, Temperature: Ptr[float32](float32(math.Inf(1)))}},
		{"no tool choice, one message", &ChatRequest{Messages: []Message{UserMessage("hi")}, MaxTokens: Ptr[uint32](math.MaxUint32)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkChatRequest(tc.req); err != nil {
				t.Fatal(err)
			}
			for _, base := range []uint32{8, 4096, 1 << 20} {
				got := lowerAt(t, 42, tc.req, base)
				want := []any{uint32(42), chatRequestTree(tc.req)}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("at base %d lowered\n  %#v\nwant\n  %#v", base, got, want)
				}
			}
		})
	}
}

func TestLiftChatResponse(t *testing.T) {
	resp := &ChatResponse{
		Message: Message{Role: RoleAssistant, Content: "Let me add.", ToolCalls: []ToolCall{{ID: "call_9", Name: "math.add", Arguments: `{"a":1}`}},
			ToolCallID: nil},
		FinishReason: FinishToolCalls,
		Usage:        Usage{InputTokens: 12, OutputTokens: math.MaxUint32},
		Model:        "model-b",
	}
	m := &fakeMemory{}
	area := m.alloc(tChatResponse.size(), tChatResponse.align())
	writeTree(m, area, tChatResponse, chatResponseTree(resp))
	if got := liftChatResponse(m, area); !reflect.DeepEqual(&got, resp) {
		t.Fatalf("lifted %+v, want %+v", got, resp)
	}

	// result<chat-response, host-error> and the event cases.
	ty := result(tChatResponse, wHostError)
	area = m.alloc(ty.size(), ty.align())
	writeTree(m, area, ty, vcase{0, chatResponseTree(resp)})
	if got, err := liftResult(m, area, liftChatResponse); err != nil || !reflect.DeepEqual(&got, resp) {
		t.Fatalf("result lifted %+v, %v", got, err)
	}
	ev := variant(wToolResult, wHostError, tList, wResContent, noneT(), tString, tChatResponse)
	area = m.alloc(ev.size(), ev.align())
	writeTree(m, area, ev, vcase{6, chatResponseTree(resp)})
	if got, ok := liftEvent(m, area).(ChatDoneEvent); !ok || !reflect.DeepEqual(&got.Response, resp) || got.Tag() != "chat-done" {
		t.Fatalf("chat-done lifted %+v", got)
	}
	writeTree(m, area, ev, vcase{5, "more té"})
	if got, ok := liftEvent(m, area).(ChatDeltaEvent); !ok || got.Text != "more té" || got.Tag() != "chat-delta" {
		t.Fatalf("chat-delta lifted %+v", got)
	}

	// Values the WIT does not have are a mismatch of worlds: a panic.
	for _, bad := range []func(){
		func() {
			tree := chatResponseTree(resp).([]any)
			tree[1] = uint8(5) // finish-reason has 5 cases
			writeTree(m, area, tChatResponse, tree)
			liftChatResponse(m, area)
		},
		func() {
			tree := chatResponseTree(resp).([]any)
			tree[0].([]any)[0] = uint8(4) // role has 4 cases
			writeTree(m, area, tChatResponse, tree)
			liftChatResponse(m, area)
		},
		func() {
			m.b[area] = 7 // event has 7 cases
			liftEvent(m, area)
		},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "toolhost:agent@0.3.0 mismatch") {
					t.Errorf("recovered %v, want an ABI mismatch", r)
				}
			}()
			bad()
		}()
	}
}

func TestCheckChatRequest(t *testing.T) {
	bad := "a\xffb"
	for _, tc := range []struct {
		field string
		edit  func(r *ChatRequest)
	}{
		{"model", func(r *ChatRequest) { r.Model = &bad }},
		{"messages[1].content", func(r *ChatRequest) { r.Messages[1].Content = bad }},
		{"messages[2].toolCalls[1].name", func(r *ChatRequest) { r.Messages[2].ToolCalls[1].Name = bad }},
		{"messages[2].toolCalls[0].arguments", func(r *ChatRequest) { r.Messages[2].ToolCalls[0].Arguments = bad }},
		{"messages[2].toolCalls[0].id", func(r *ChatRequest) { r.Messages[2].ToolCalls[0].ID = bad }},
		{"messages[3].toolCallId", func(r *ChatRequest) { r.Messages[3].ToolCallID = &bad }},
		{"messages[0].role", func(r *ChatRequest) { r.Messages[0].Role = 9 }},
		{"tools[1].name", func(r *ChatRequest) { r.Tools[1].Name = bad }},
		{"tools[0].description", func(r *ChatRequest) { r.Tools[0].Description = &bad }},
		{"tools[0].inputSchema", func(r *ChatRequest) { r.Tools[0].InputSchema = bad }},
		{"toolChoice.val", func(r *ChatRequest) { r.ToolChoice.Name = bad }},
		{"toolChoice", func(r *ChatRequest) { r.ToolChoice.Kind = 4 }},
		{"stop[1]", func(r *ChatRequest) { r.Stop[1] = bad }},
	} {
		r := sampleRequest()
		tc.edit(r)
		err := checkChatRequest(r)
		var he *HostError
		if !errors.As(err, &he) || he.Code != InvalidArgument || !strings.Contains(he.Message, tc.field) {
			t.Errorf("%s: err = %v, want invalid-argument naming it", tc.field, err)
		}
	}
	if err := checkChatRequest(nil); !errors.Is(err, InvalidArgument) {
		t.Errorf("nil request: %v", err)
	}
	// A named choice's name is checked only for named.
	r := sampleRequest()
	r.ToolChoice = &ToolChoice{Kind: ToolChoiceAuto, Name: bad}
	if err := checkChatRequest(r); err != nil {
		t.Errorf("auto with a stray name: %v", err)
	}
}

func TestChatJSON(t *testing.T) {
	// The JSON form is the JS bindings' form of the same values.
	in := `{"model":null,"messages":[{"role":"user","content":"hi","toolCalls":[],"toolCallId":null},
		{"role":"tool","content":"4","toolCalls":[],"toolCallId":"c1"}],
		"tools":[{"name":"echo","description":null,"inputSchema":"{}"}],
		"toolChoice":{"tag":"named","val":"echo"},"maxTokens":10,"temperature":0.5,"stop":["x"]}`
	var r ChatRequest
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	want := ChatRequest{
		Messages:   []Message{{Role: RoleUser, Content: "hi", ToolCalls: []ToolCall{}}, {Role: RoleTool, Content: "4", ToolCalls: []ToolCall{}, ToolCallID: ptr("c1")}},
		Tools:      []Tool{{Name: "echo", InputSchema: "{}"}},
		ToolChoice: ChooseTool("echo"), MaxTokens: Ptr[uint32](10), Temperature: Ptr[float32](0.5), Stop: []string{"x"},
	}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("decoded %+v\nwant %+v", r, want)
	}
	out, err := json.Marshal(&ChatResponse{Message: Message{Role: RoleAssistant, Content: "ok", ToolCalls: []ToolCall{}}, FinishReason: FinishContentFilter, Model: "m"})
	if err != nil || string(out) != `{"message":{"role":"assistant","content":"ok","toolCalls":[],"toolCallId":null},"finishReason":"content-filter","usage":{"inputTokens":0,"outputTokens":0},"model":"m"}` {
		t.Fatalf("encoded %s, %v", out, err)
	}
	for _, c := range []ToolChoice{{Kind: ToolChoiceAuto}, {Kind: ToolChoiceNone}, {Kind: ToolChoiceRequired}, {Kind: ToolChoiceNamed, Name: "a.b"}} {
		b, err := json.Marshal(c)
		var back ToolChoice
		if err != nil || json.Unmarshal(b, &back) != nil || back != c {
			t.Errorf("tool choice %+v: %s %v -> %+v", c, b, err, back)
		}
	}
	for _, bad := range []string{`{"tag":"maybe"}`, `{"tag":"named"}`, `[]`} {
		var c ToolChoice
		if json.Unmarshal([]byte(bad), &c) == nil {
			t.Errorf("tool choice %s decoded as %+v", bad, c)
		}
	}
	var role Role
	if json.Unmarshal([]byte(`"robot"`), &role) == nil {
		t.Error("role robot decoded")
	}
	if _, err := json.Marshal(Role(7)); err == nil {
		t.Error("role 7 encoded")
	}
	if FinishReason(9).String() != "finish-reason(9)" || FinishToolCalls.String() != "tool-calls" || RoleTool.String() != "tool" {
		t.Error("enum names")
	}
}

// requestFrom builds a request from fuzz input: texts split on NUL give
// the strings, flags the options.
func requestFrom(text string, flags uint8, n uint32, temp float32) *ChatRequest {
	parts := strings.Split(text, "\x00")
	at := func(i int) string { return parts[i%len(parts)] }
	r := &ChatRequest{}
	if flags&1 != 0 {
		r.Model = ptr(at(0))
	}
	for i := range int(n % 5) {
		msg := Message{Role: Role(i % 4), Content: at(i + 1)}
		for j := range int(flags>>5) % 3 {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: at(i + j), Name: at(i + j + 2), Arguments: at(j)})
		}
		if i%2 == 1 {
			msg.ToolCallID = ptr(at(i + 3))
		}
		r.Messages = append(r.Messages, msg)
	}
	for i := range int(n/5) % 4 {
		tl := Tool{Name: at(i), InputSchema: at(i + 1)}
		if flags&2 != 0 {
			tl.Description = ptr(at(i + 2))
		}
		r.Tools = append(r.Tools, tl)
	}
	if flags&4 != 0 {
		r.ToolChoice = &ToolChoice{Kind: ToolChoiceKind(n % 4)}
		if r.ToolChoice.Kind == ToolChoiceNamed {
			r.ToolChoice.Name = at(5)
		}
	}
	if flags&8 != 0 {
		r.MaxTokens = &n
	}
	if flags&16 != 0 {
		r.Temperature = &temp
	}
	for i := range int(n/20) % 3 {
		r.Stop = append(r.Stop, at(i+4))
	}
	return r
}

// FuzzChatRequest: every request is either refused by checkChatRequest
// (then one of its strings is not valid UTF-8) or lowered so that the
// ABI's reading of the memory gives back each field, and its JSON form
// decodes to the same request.
func FuzzChatRequest(f *testing.F) {
	f.Add("model\x00hello\x00world\x00{}\x00stop", uint8(0xff), uint32(23), float32(0.7))
	f.Add("", uint8(0), uint32(0), float32(0))
	f.Add("a\xffb\x00c", uint8(31), uint32(7), float32(math.NaN()))
	f.Fuzz(func(t *testing.T, text string, flags uint8, n uint32, temp float32) {
		r := requestFrom(text, flags, n, temp)
		if err := checkChatRequest(r); err != nil {
			if !errors.Is(err, InvalidArgument) || strings.ToValidUTF8(text, "") == text {
				t.Fatalf("refused %v with valid UTF-8 input %q", err, text)
			}
			return
		}
		got := lowerAt(t, n, r, 64)
		if want := []any{n, chatRequestTree(r)}; !reflect.DeepEqual(got, want) {
			t.Fatalf("lowered\n  %#v\nwant\n  %#v", got, want)
		}
		if temp != temp {
			return // NaN: JSON has none
		}
		b, err := json.Marshal(r)
		if err != nil {
			if math.IsInf(float64(temp), 0) {
				return
			}
			t.Fatal(err)
		}
		var back ChatRequest
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(chatRequestTree(&back), chatRequestTree(r)) {
			t.Fatalf("JSON round trip %s gave %+v", b, back)
		}
	})
}

// FuzzChatResponse: a chat-response written by the ABI's rules lifts to
// the Go value it came from.
func FuzzChatResponse(f *testing.F) {
	f.Add("text\x00id\x00name\x00{}\x00model", uint8(2), uint32(5), uint32(7))
	f.Add("", uint8(0), uint32(0), uint32(0))
	f.Fuzz(func(t *testing.T, text string, flags uint8, in, out uint32) {
		parts := strings.Split(text, "\x00")
		at := func(i int) string { return parts[i%len(parts)] }
		resp := &ChatResponse{
			Message:      Message{Role: Role(flags % 4), Content: at(0), ToolCalls: []ToolCall{}},
			FinishReason: FinishReason(flags % 5),
			Usage:        Usage{InputTokens: in, OutputTokens: out},
			Model:        at(4),
		}
		for i := range int(flags>>4) % 4 {
			resp.Message.ToolCalls = append(resp.Message.ToolCalls, ToolCall{ID: at(i + 1), Name: at(i + 2), Arguments: at(i + 3)})
		}
		if flags&8 != 0 {
			resp.Message.ToolCallID = ptr(at(3))
		}
		m := &fakeMemory{}
		area := m.alloc(tChatResponse.size(), 4)
		writeTree(m, area, tChatResponse, chatResponseTree(resp))
		if got := liftChatResponse(m, area); !reflect.DeepEqual(&got, resp) {
			t.Fatalf("lifted %+v, want %+v", got, resp)
		}
	})
}
