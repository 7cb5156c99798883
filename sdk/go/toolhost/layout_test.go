package toolhost

import (
	"encoding/binary"
	"reflect"
	"testing"
)

// abiType describes a WIT type for the canonical ABI's layout rules
// (CanonicalABI.md: alignment, elem_size, and the field/case offsets),
// independently of the constants in layout.go.
type abiType struct {
	kind   string // "u8" (enum, bool), "u32" (handle), "f32", "u64" (s64), "string", "list", "record", "option", "result", "variant"
	fields []abiType
}

var (
	tU8     = abiType{kind: "u8"}
	tU32    = abiType{kind: "u32"}
	tF32    = abiType{kind: "f32"}
	tString = abiType{kind: "string"}
	tList   = abiType{kind: "list"}
)

func record(fs ...abiType) abiType  { return abiType{kind: "record", fields: fs} }
func variant(cs ...abiType) abiType { return abiType{kind: "variant", fields: cs} }
func option(t abiType) abiType      { return variant(abiType{kind: "none"}, t) }
func result(ok, err abiType) abiType {
	return variant(ok, err)
}

func alignTo(n, a uint32) uint32 { return (n + a - 1) / a * a }

func (t abiType) align() uint32 {
	switch t.kind {
	case "none", "u8":
		return 1
	case "u32", "f32", "string", "list":
		return 4
	case "u64":
		return 8
	}
	a := uint32(1)
	for _, f := range t.fields {
		a = max(a, f.align())
	}
	if t.kind == "variant" {
		a = max(a, 1) // a discriminant of fewer than 256 cases is a u8
	}
	return a
}

func (t abiType) size() uint32 {
	switch t.kind {
	case "none":
		return 0
	case "u8":
		return 1
	case "u32", "f32":
		return 4
	case "string", "list", "u64":
		return 8
	case "record":
		var s uint32
		for _, f := range t.fields {
			s = alignTo(s, f.align()) + f.size()
		}
		return alignTo(s, t.align())
	case "variant":
		var p uint32
		for _, c := range t.fields {
			p = max(p, c.size())
		}
		return alignTo(t.payloadOffset()+p, t.align())
	}
	panic(t.kind)
}

// offsets are a record's field offsets.
func (t abiType) offsets() []uint32 {
	var out []uint32
	var s uint32
	for _, f := range t.fields {
		s = alignTo(s, f.align())
		out = append(out, s)
		s += f.size()
	}
	return out
}

// flatCount is how many core values t flattens to (CanonicalABI.md,
// "Flattening"): a variant is its discriminant and, joined, the longest
// case's values.
func (t abiType) flatCount() int {
	switch t.kind {
	case "none":
		return 0
	case "u8", "u32", "f32", "u64":
		return 1
	case "string", "list":
		return 2
	case "record":
		n := 0
		for _, f := range t.fields {
			n += f.flatCount()
		}
		return n
	}
	n := 0
	for _, c := range t.fields {
		n = max(n, c.flatCount())
	}
	return 1 + n
}

// payloadOffset is where a variant's payload starts (after its u8
// discriminant).
func (t abiType) payloadOffset() uint32 {
	a := uint32(1)
	for _, c := range t.fields {
		a = max(a, c.align())
	}
	return alignTo(1, a)
}

// The world's types, as in wit/agent.wit.
var (
	wHostError    = record(tU8, tString)
	wTool         = record(tString, option(tString), tString)
	wToolResult   = record(tString, tString, tString)
	wResInfo      = record(tString, tString, option(tString), option(tString))
	wResContent   = record(tString, option(tString), tString)
	wToolCall     = record(tString, tString, tString)
	wMessage      = record(tU8, tString, tList, option(tString))
	wToolChoice   = variant(abiType{kind: "none"}, abiType{kind: "none"}, abiType{kind: "none"}, tString)
	wChatRequest  = record(option(tString), tList, tList, option(wToolChoice), option(tU32), option(tF32), tList)
	wUsage        = record(tU32, tU32)
	wChatResponse = record(wMessage, tU8, wUsage, tString)
	wChatParams   = record(tU32, wChatRequest) // the tuple (self, request)
	wAgentMessage = record(tString, option(tString), tString)
	wEvent        = variant(wToolResult, wHostError, tList, wResContent, abiType{kind: "none"}, tString, wChatResponse,
		wAgentMessage, tString, tString)
	wResultUnit   = result(abiType{kind: "none"}, wHostError)
	wEnvelope     = record(tString, wEvent)
	wOptEnvelope  = option(wEnvelope)
	wRunResult    = result(tString, tString)
	wResultString = result(tString, wHostError)
)

// layoutCheck compares a constant of layout.go with what the canonical
// ABI says.
func layoutCheck(t *testing.T) func(what string, got, want uint32) {
	return func(what string, got, want uint32) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %d, the canonical ABI says %d", what, got, want)
		}
	}
}

func TestLayout(t *testing.T) {
	check := layoutCheck(t)
	offs := func(what string, ty abiType, got ...uint32) {
		t.Helper()
		if want := ty.offsets(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s offsets = %v, the canonical ABI says %v", what, got, want)
		}
	}
	check("sizeString", sizeString, tString.size())
	check("sizeOptString", sizeOptString, option(tString).size())
	check("offOptStringVal", offOptStringVal, option(tString).payloadOffset())
	check("sizeHostError", sizeHostError, wHostError.size())
	offs("host-error", wHostError, offHostErrorCode, offHostErrorMsg)
	check("sizeTool", sizeTool, wTool.size())
	offs("tool", wTool, offToolName, offToolDesc, offToolSchema)
	check("sizeToolResult", sizeToolResult, wToolResult.size())
	offs("tool-result", wToolResult, offTRName, offTRArguments, offTRValue)
	check("sizeResInfo", sizeResInfo, wResInfo.size())
	offs("resource-info", wResInfo, offRIURI, offRIName, offRIDesc, offRIMIMEType)
	check("sizeResContent", sizeResContent, wResContent.size())
	offs("resource-content", wResContent, offRCURI, offRCMIMEType, offRCContent)

	for _, r := range []struct {
		name string
		ok   abiType
		size uint32
	}{
		{"result<string, host-error>", tString, sizeResultString},
		{"result<list<tool>, host-error>", tList, sizeResultString},
		{"result<own<tooling>, host-error>", tU32, sizeResultHandle},
		{"result<tool-result, host-error>", wToolResult, sizeResultToolResult},
		{"result<resource-content, host-error>", wResContent, sizeResultResContent},
		{"result<chat-response, host-error>", wChatResponse, sizeResultChatResp},
	} {
		ty := result(r.ok, wHostError)
		check(r.name+" size", r.size, ty.size())
		check(r.name+" payload offset", offResultVal, ty.payloadOffset())
	}
	check("sizeToolCall", sizeToolCall, wToolCall.size())
	offs("tool-call", wToolCall, offTCID, offTCName, offTCArguments)
	check("sizeMessage", sizeMessage, wMessage.size())
	offs("message", wMessage, offMsgRole, offMsgContent, offMsgToolCalls, offMsgToolCall)
	check("sizeChatRequest", sizeChatRequest, wChatRequest.size())
	offs("chat-request", wChatRequest, offReqModel, offReqMessages, offReqTools, offReqChoice, offReqMaxTokens, offReqTemp, offReqStop)
	for _, o := range []abiType{option(tU32), option(tF32), option(wToolChoice)} {
		check("offOptVal", offOptVal, o.payloadOffset())
	}
	check("offChoiceVal", offChoiceVal, wToolChoice.payloadOffset())
	check("sizeUsage", sizeUsage, wUsage.size())
	offs("usage", wUsage, offUsageIn, offUsageOut)
	check("sizeChatResp", sizeChatResp, wChatResponse.size())
	offs("chat-response", wChatResponse, offRespMessage, offRespFinish, offRespUsage, offRespModel)
	check("sizeChatParams", sizeChatParams, wChatParams.size())
	offs("chat params", wChatParams, offParamsSelf, offParamsReq)
	if n := wChatParams.flatCount(); n <= 16 {
		t.Errorf("chat's parameters flatten to %d values; lower.go passes them by address, which the canonical ABI does only past 16", n)
	}
	check("sizeRunResult", sizeRunResult, wRunResult.size())
	check("offRunResultVal", offRunResultVal, wRunResult.payloadOffset())
	check("sizeEvent", sizeEvent, wEvent.size())
	check("offEventVal", offEventVal, wEvent.payloadOffset())
	check("sizeEnvelope", sizeEnvelope, wEnvelope.size())
	offs("envelope", wEnvelope, offEnvelopeID, offEnvelopeEvent)
	check("sizeOptEnvelope", sizeOptEnvelope, wOptEnvelope.size())
	check("offOptEnvVal", offOptEnvVal, wOptEnvelope.payloadOffset())
	check("numEventCases", uint32(numEventCases), uint32(len(wEvent.fields)))
	check("sizeAgentMessage", sizeAgentMessage, wAgentMessage.size())
	offs("agent-message", wAgentMessage, offAMSender, offAMSession, offAMContent)
	check("sizeResultUnit", sizeResultUnit, wResultUnit.size())
	check("result<_, host-error> payload offset", offResultVal, wResultUnit.payloadOffset())
	// send's parameters (to, content, session) and the return area's
	// address travel flat: 2 + 2 + 3, and 1.
	if n := record(tString, tString, option(tString)).flatCount(); n != 7 {
		t.Errorf("send's parameters flatten to %d values; abi_wasip1.go passes 7", n)
	}
	// Every result that comes back through the return area flattens to
	// more than one value.
	for _, ty := range []abiType{wResultUnit, wResultString} {
		if n := ty.flatCount(); n <= 1 {
			t.Errorf("a result flattens to %d values, which the canonical ABI returns directly", n)
		}
	}

	largest := uint32(0)
	for _, ty := range []abiType{wResultString, wResultUnit, result(wToolResult, wHostError), result(wResContent, wHostError), result(wChatResponse, wHostError), wOptEnvelope} {
		largest = max(largest, ty.size())
	}
	check("sizeLargestReturnArea", sizeLargestReturnArea, largest)
	for _, ty := range []abiType{wHostError, wTool, wToolResult, wResInfo, wResContent, wEvent, wEnvelope, wOptEnvelope, wRunResult,
		wToolCall, wMessage, wChatRequest, wChatResponse, wChatParams, option(wToolChoice), option(tF32), wAgentMessage, wResultUnit} {
		if ty.align() != 4 {
			t.Errorf("a type of the world has alignment %d, layout.go assumes 4", ty.align())
		}
	}
}

// fakeMemory is linear memory for the lifting tests: a byte slice whose
// index is the address, with a bump allocator laying values out by the
// canonical ABI (abiType), not by layout.go.
type fakeMemory struct{ b []byte }

func (m *fakeMemory) load(addr, n uint32) []byte {
	if uint64(addr)+uint64(n) > uint64(len(m.b)) {
		panic("fake memory: out of bounds")
	}
	return m.b[addr : addr+n]
}

func (m *fakeMemory) alloc(size, align uint32) uint32 {
	p := alignTo(uint32(len(m.b)), max(align, 1))
	if p == 0 {
		p = 8 // 0 stays unused, as a real allocator's would
	}
	m.b = append(m.b, make([]byte, p+size-uint32(len(m.b)))...)
	return p
}

func (m *fakeMemory) put32(addr, v uint32) { binary.LittleEndian.PutUint32(m.b[addr:], v) }

// str stores s and writes its (ptr, len) at addr.
func (m *fakeMemory) str(addr uint32, s string) {
	p := m.alloc(uint32(len(s)), 1)
	copy(m.b[p:], s)
	m.put32(addr, p)
	m.put32(addr+4, uint32(len(s)))
}

// optStr writes an option<string> at addr.
func (m *fakeMemory) optStr(addr uint32, s *string) {
	ty := option(tString)
	if s == nil {
		m.b[addr] = 0
		return
	}
	m.b[addr] = 1
	m.str(addr+ty.payloadOffset(), *s)
}

func ptr(s string) *string { return &s }

func TestLiftEnvelopes(t *testing.T) {
	content := ResourceContent{URI: "test://x", MIMEType: ptr("text/plain"), Content: "héllo"}
	infos := []ResourceInfo{
		{URI: "a://1", Name: "one", Description: ptr("the first"), MIMEType: nil},
		{URI: "a://2", Name: "two", Description: nil, MIMEType: ptr("application/json")},
	}
	tr := ToolResult{Name: "echo", Arguments: `{"a":1}`, Value: `{"content":[]}`}
	for _, tc := range []struct {
		name  string
		write func(m *fakeMemory, payload uint32) uint8
		want  Event
	}{
		{"tool-result", func(m *fakeMemory, p uint32) uint8 {
			o := wToolResult.offsets()
			m.str(p+o[0], tr.Name)
			m.str(p+o[1], tr.Arguments)
			m.str(p+o[2], tr.Value)
			return 0
		}, ToolResultEvent{Result: tr}},
		{"error", func(m *fakeMemory, p uint32) uint8 {
			o := wHostError.offsets()
			m.b[p+o[0]] = uint8(Timeout)
			m.str(p+o[1], "too slow")
			return 1
		}, ErrorEvent{Err: &HostError{Code: Timeout, Message: "too slow"}}},
		{"resource-list-updated", func(m *fakeMemory, p uint32) uint8 {
			elems := m.alloc(uint32(len(infos))*wResInfo.size(), wResInfo.align())
			o := wResInfo.offsets()
			for i, ri := range infos {
				e := elems + uint32(i)*wResInfo.size()
				m.str(e+o[0], ri.URI)
				m.str(e+o[1], ri.Name)
				m.optStr(e+o[2], ri.Description)
				m.optStr(e+o[3], ri.MIMEType)
			}
			m.put32(p, elems)
			m.put32(p+4, uint32(len(infos)))
			return 2
		}, ResourceListUpdatedEvent{Resources: infos}},
		{"resource-updated", func(m *fakeMemory, p uint32) uint8 {
			o := wResContent.offsets()
			m.str(p+o[0], content.URI)
			m.optStr(p+o[1], content.MIMEType)
			m.str(p+o[2], content.Content)
			return 3
		}, ResourceUpdatedEvent{Content: content}},
		{"shutdown", func(*fakeMemory, uint32) uint8 { return 4 }, ShutdownEvent{}},
		{"chat-delta", func(m *fakeMemory, p uint32) uint8 { m.str(p, "more té"); return 5 }, ChatDeltaEvent{Text: "more té"}},
		{"message", func(m *fakeMemory, p uint32) uint8 {
			o := wAgentMessage.offsets()
			m.str(p+o[0], "agent:router")
			m.optStr(p+o[1], ptr("s-1"))
			m.str(p+o[2], `{"q":"hé"}`)
			return 7
		}, MessageEvent{Message: AgentMessage{Sender: "agent:router", Session: ptr("s-1"), Content: `{"q":"hé"}`}}},
		{"message", func(m *fakeMemory, p uint32) uint8 {
			o := wAgentMessage.offsets()
			m.str(p+o[0], "api")
			m.optStr(p+o[1], nil)
			m.str(p+o[2], "")
			return 7
		}, MessageEvent{Message: AgentMessage{Sender: "api"}}},
		{"reply-delta", func(m *fakeMemory, p uint32) uint8 { m.str(p, "par"); return 8 }, ReplyDeltaEvent{Text: "par"}},
		{"reply", func(m *fakeMemory, p uint32) uint8 { m.str(p, "tial"); return 9 }, ReplyEvent{Content: "tial"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &fakeMemory{}
			area := m.alloc(wOptEnvelope.size(), wOptEnvelope.align())
			m.b[area] = 1
			env := area + wOptEnvelope.payloadOffset()
			eo := wEnvelope.offsets()
			m.str(env+eo[0], "11111111-2222-3333-4444-555555555555")
			ev := env + eo[1]
			m.b[ev] = tc.write(m, ev+wEvent.payloadOffset())
			got, ok := liftOptEnvelope(m, area)
			if !ok || got.ID != "11111111-2222-3333-4444-555555555555" || !reflect.DeepEqual(got.Event, tc.want) {
				t.Fatalf("lifted %v %+v, want %+v", ok, got, tc.want)
			}
			if got.Event.Tag() != tc.name {
				t.Errorf("Tag() = %q, want %q", got.Event.Tag(), tc.name)
			}
		})
	}
	m := &fakeMemory{}
	area := m.alloc(wOptEnvelope.size(), 4)
	if _, ok := liftOptEnvelope(m, area); ok {
		t.Error("none lifted as an envelope")
	}
}

func TestLiftResults(t *testing.T) {
	m := &fakeMemory{}
	ty := result(tList, wHostError)
	area := m.alloc(ty.size(), ty.align())
	tools := []Tool{{Name: "echo", Description: ptr("echoes"), InputSchema: `{"type":"object"}`}, {Name: "x", InputSchema: "{}"}}
	elems := m.alloc(uint32(len(tools))*wTool.size(), 4)
	o := wTool.offsets()
	for i, tl := range tools {
		e := elems + uint32(i)*wTool.size()
		m.str(e+o[0], tl.Name)
		m.optStr(e+o[1], tl.Description)
		m.str(e+o[2], tl.InputSchema)
	}
	m.put32(area+ty.payloadOffset(), elems)
	m.put32(area+ty.payloadOffset()+4, uint32(len(tools)))
	got, err := liftResult(m, area, func(m memory, a uint32) []Tool { return liftList(m, a, sizeTool, liftTool) })
	if err != nil || !reflect.DeepEqual(got, tools) {
		t.Fatalf("list-tools lifted %+v, %v", got, err)
	}

	m.b[area] = 1
	eo := wHostError.offsets()
	m.b[area+ty.payloadOffset()+eo[0]] = uint8(Denied)
	m.str(area+ty.payloadOffset()+eo[1], "not granted")
	_, err = liftResult(m, area, liftString)
	var he *HostError
	if !asHostError(err, &he) || he.Code != Denied || he.Message != "not granted" {
		t.Fatalf("err lifted as %v", err)
	}

	h := result(tU32, wHostError)
	area = m.alloc(h.size(), h.align())
	m.put32(area+h.payloadOffset(), 7)
	if v, err := liftResult(m, area, u32); v != 7 || err != nil {
		t.Fatalf("handle lifted as %d, %v", v, err)
	}

	m.b[area] = 2
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a result discriminant of 2 was accepted")
			}
		}()
		liftResult(m, area, u32)
	}()
}

func asHostError(err error, out **HostError) bool {
	he, ok := err.(*HostError)
	*out = he
	return ok
}
