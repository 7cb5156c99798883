package toolhost

import (
	"encoding/binary"
	"fmt"
)

// A generic reader and writer of canonical ABI values, driven by abiType
// (layout_test.go) rather than by layout.go's constants, so that the
// lowering and lifting code is checked against the ABI's rules. A value is
// a tree: u8 uint8, u32 uint32, f32 its bits as uint32, string string,
// list []any, record []any, variant vcase.

type vcase struct {
	Case int
	Val  any // nil for a case without payload
}

func listOf(elem abiType) abiType { return abiType{kind: "list", fields: []abiType{elem}} }

func noneT() abiType { return abiType{kind: "none"} }

func some(v any) vcase { return vcase{1, v} }

var none = vcase{0, nil}

// readTree reads the value of type t at addr.
func readTree(m memory, addr uint32, t abiType) any {
	le := binary.LittleEndian
	switch t.kind {
	case "none":
		return nil
	case "u8":
		return m.load(addr, 1)[0]
	case "u32", "f32":
		return le.Uint32(m.load(addr, 4))
	case "string":
		p, n := le.Uint32(m.load(addr, 4)), le.Uint32(m.load(addr+4, 4))
		return string(m.load(p, n))
	case "list":
		p, n := le.Uint32(m.load(addr, 4)), le.Uint32(m.load(addr+4, 4))
		e := t.fields[0]
		if p%e.align() != 0 {
			panic(fmt.Sprintf("list at %d not aligned to %d", p, e.align()))
		}
		out := []any{}
		for i := range n {
			out = append(out, readTree(m, p+i*e.size(), e))
		}
		return out
	case "record":
		out := []any{}
		for i, off := range t.offsets() {
			out = append(out, readTree(m, addr+off, t.fields[i]))
		}
		return out
	case "variant":
		d := int(m.load(addr, 1)[0])
		if d >= len(t.fields) {
			panic(fmt.Sprintf("discriminant %d of %d cases", d, len(t.fields)))
		}
		return vcase{d, readTree(m, addr+t.payloadOffset(), t.fields[d])}
	}
	panic(t.kind)
}

// writeTree writes v, of type t, at addr, allocating strings and lists.
func writeTree(m *fakeMemory, addr uint32, t abiType, v any) {
	switch t.kind {
	case "none":
	case "u8":
		m.b[addr] = v.(uint8)
	case "u32", "f32":
		m.put32(addr, v.(uint32))
	case "string":
		m.str(addr, v.(string))
	case "list":
		xs, e := v.([]any), t.fields[0]
		p := m.alloc(uint32(len(xs))*e.size(), e.align())
		for i, x := range xs {
			writeTree(m, p+uint32(i)*e.size(), e, x)
		}
		m.put32(addr, p)
		m.put32(addr+4, uint32(len(xs)))
	case "record":
		for i, off := range t.offsets() {
			writeTree(m, addr+off, t.fields[i], v.([]any)[i])
		}
	case "variant":
		c := v.(vcase)
		m.b[addr] = uint8(c.Case)
		writeTree(m, addr+t.payloadOffset(), t.fields[c.Case], c.Val)
	default:
		panic(t.kind)
	}
}

// The provider interface's types with their list elements.
var (
	tToolCall     = record(tString, tString, tString)
	tMessage      = record(tU8, tString, listOf(tToolCall), option(tString))
	tTool         = record(tString, option(tString), tString)
	tToolChoice   = variant(noneT(), noneT(), noneT(), tString)
	tChatRequest  = record(option(tString), listOf(tMessage), listOf(tTool), option(tToolChoice), option(tU32), option(tF32), listOf(tString))
	tChatParams   = record(tU32, tChatRequest)
	tChatResponse = record(tMessage, tU8, record(tU32, tU32), tString)
	tAgentMessage = record(tString, option(tString), tString)
)

// Trees of Go values, field by field in WIT order.

func optTree(s *string) vcase {
	if s == nil {
		return none
	}
	return some(*s)
}

func messageTree(msg Message) any {
	calls := []any{}
	for _, c := range msg.ToolCalls {
		calls = append(calls, []any{c.ID, c.Name, c.Arguments})
	}
	return []any{uint8(msg.Role), msg.Content, calls, optTree(msg.ToolCallID)}
}

func chatRequestTree(r *ChatRequest) any {
	msgs, tools, stop := []any{}, []any{}, []any{}
	for _, msg := range r.Messages {
		msgs = append(msgs, messageTree(msg))
	}
	for _, t := range r.Tools {
		tools = append(tools, []any{t.Name, optTree(t.Description), t.InputSchema})
	}
	for _, s := range r.Stop {
		stop = append(stop, s)
	}
	choice := none
	if c := r.ToolChoice; c != nil {
		var val any
		if c.Kind == ToolChoiceNamed {
			val = c.Name
		}
		choice = some(vcase{int(c.Kind), val})
	}
	maxTokens, temp := none, none
	if r.MaxTokens != nil {
		maxTokens = some(*r.MaxTokens)
	}
	if r.Temperature != nil {
		temp = some(f32bits(*r.Temperature))
	}
	return []any{optTree(r.Model), msgs, tools, choice, maxTokens, temp, stop}
}

func chatResponseTree(r *ChatResponse) any {
	return []any{messageTree(r.Message), uint8(r.FinishReason), []any{r.Usage.InputTokens, r.Usage.OutputTokens}, r.Model}
}
