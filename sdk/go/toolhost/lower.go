package toolhost

import (
	"encoding/binary"
	"math"
	"strconv"
)

// Lowering: laying a Go value out by the canonical ABI in memory the host
// reads, for the parameters that do not travel flat (chat and
// chat-stream's (self, chat-request) tuple). A lowerer builds the block in
// a byte slice with addresses relative to its start and records where
// they are; place copies it to its final address and rebases them. Every
// string is copied into the block, so nothing the host reads can move or
// be collected during the call.

type lowerer struct {
	buf    []byte
	fixups []uint32 // offsets in buf of u32 addresses relative to buf
}

// alloc takes size bytes aligned to align (a power of two, at most 8: the
// block is placed at an address aligned to 8) and returns their offset.
func (l *lowerer) alloc(size, align uint32) uint32 {
	off := (uint32(len(l.buf)) + align - 1) &^ (align - 1)
	l.buf = append(l.buf, make([]byte, off+size-uint32(len(l.buf)))...)
	return off
}

func (l *lowerer) u8(at uint32, v uint8)    { l.buf[at] = v }
func (l *lowerer) u32(at, v uint32)         { binary.LittleEndian.PutUint32(l.buf[at:], v) }
func (l *lowerer) f32(at uint32, v float32) { l.u32(at, math.Float32bits(v)) }

// ptrLen writes a (ptr, len) pair whose ptr is the offset off in the block.
func (l *lowerer) ptrLen(at, off, n uint32) {
	l.u32(at+offPtr, off)
	l.u32(at+offLen, n)
	l.fixups = append(l.fixups, at+offPtr)
}

func (l *lowerer) string(at uint32, s string) {
	off := l.alloc(uint32(len(s)), 1)
	copy(l.buf[off:], s)
	l.ptrLen(at, off, uint32(len(s)))
}

func (l *lowerer) optString(at uint32, s *string) {
	if s == nil {
		l.u8(at+offOptStringDisc, 0)
		return
	}
	l.u8(at+offOptStringDisc, 1)
	l.string(at+offOptStringVal, *s)
}

// list lays out the elements of xs, elem bytes each, with f.
func lowerList[T any](l *lowerer, at uint32, xs []T, elem uint32, f func(*lowerer, uint32, *T)) {
	off := l.alloc(uint32(len(xs))*elem, 4)
	l.ptrLen(at, off, uint32(len(xs)))
	for i := range xs {
		f(l, off+uint32(i)*elem, &xs[i])
	}
}

func lowerTool(l *lowerer, at uint32, t *Tool) {
	l.string(at+offToolName, t.Name)
	l.optString(at+offToolDesc, t.Description)
	l.string(at+offToolSchema, t.InputSchema)
}

func lowerToolCall(l *lowerer, at uint32, c *ToolCall) {
	l.string(at+offTCID, c.ID)
	l.string(at+offTCName, c.Name)
	l.string(at+offTCArguments, c.Arguments)
}

func lowerMessage(l *lowerer, at uint32, m *Message) {
	l.u8(at+offMsgRole, uint8(m.Role))
	l.string(at+offMsgContent, m.Content)
	lowerList(l, at+offMsgToolCalls, m.ToolCalls, sizeToolCall, lowerToolCall)
	l.optString(at+offMsgToolCall, m.ToolCallID)
}

func lowerString(l *lowerer, at uint32, s *string) { l.string(at, *s) }

func lowerChatRequest(l *lowerer, at uint32, r *ChatRequest) {
	l.optString(at+offReqModel, r.Model)
	lowerList(l, at+offReqMessages, r.Messages, sizeMessage, lowerMessage)
	lowerList(l, at+offReqTools, r.Tools, sizeTool, lowerTool)
	if c := r.ToolChoice; c != nil {
		l.u8(at+offReqChoice, 1)
		v := at + offReqChoice + offOptVal
		l.u8(v, uint8(c.Kind))
		if c.Kind == ToolChoiceNamed {
			l.string(v+offChoiceVal, c.Name)
		}
	}
	if r.MaxTokens != nil {
		l.u8(at+offReqMaxTokens, 1)
		l.u32(at+offReqMaxTokens+offOptVal, *r.MaxTokens)
	}
	if r.Temperature != nil {
		l.u8(at+offReqTemp, 1)
		l.f32(at+offReqTemp+offOptVal, *r.Temperature)
	}
	lowerList(l, at+offReqStop, r.Stop, sizeString, lowerString)
}

// lowerChatParams lays out chat's (self, request) tuple at the block's
// start. r must have passed checkChatRequest.
func lowerChatParams(self uint32, r *ChatRequest) *lowerer {
	l := &lowerer{}
	at := l.alloc(sizeChatParams, 8)
	l.u32(at+offParamsSelf, self)
	lowerChatRequest(l, at+offParamsReq, r)
	return l
}

// place copies the block to dst, which the host sees at address base
// (aligned to 8), rebasing its addresses; dst must hold len(l.buf) bytes.
func (l *lowerer) place(dst []byte, base uint32) {
	copy(dst, l.buf)
	for _, at := range l.fixups {
		binary.LittleEndian.PutUint32(dst[at:], binary.LittleEndian.Uint32(dst[at:])+base)
	}
}

// checkChatRequest refuses, before any host call, what the host would trap
// on (a string that is not valid UTF-8, an enum or variant case the WIT
// does not have) with an InvalidArgument *HostError naming the field.
func checkChatRequest(r *ChatRequest) error {
	if r == nil {
		return &HostError{Code: InvalidArgument, Message: "toolhost: no chat request"}
	}
	idx := func(field string, i int) string { return field + "[" + strconv.Itoa(i) + "]" }
	if r.Model != nil {
		if err := checkUTF8("model", *r.Model); err != nil {
			return err
		}
	}
	for i, m := range r.Messages {
		at := idx("messages", i)
		if int(m.Role) >= len(roleNames) {
			return &HostError{Code: InvalidArgument, Message: "toolhost: " + at + ".role is " + m.Role.String()}
		}
		if err := checkUTF8(at+".content", m.Content); err != nil {
			return err
		}
		for j, c := range m.ToolCalls {
			tc := at + "." + idx("toolCalls", j)
			for _, f := range [...]struct{ name, v string }{{".id", c.ID}, {".name", c.Name}, {".arguments", c.Arguments}} {
				if err := checkUTF8(tc+f.name, f.v); err != nil {
					return err
				}
			}
		}
		if m.ToolCallID != nil {
			if err := checkUTF8(at+".toolCallId", *m.ToolCallID); err != nil {
				return err
			}
		}
	}
	for i, t := range r.Tools {
		at := idx("tools", i)
		if err := checkUTF8(at+".name", t.Name); err != nil {
			return err
		}
		if t.Description != nil {
			if err := checkUTF8(at+".description", *t.Description); err != nil {
				return err
			}
		}
		if err := checkUTF8(at+".inputSchema", t.InputSchema); err != nil {
			return err
		}
	}
	if c := r.ToolChoice; c != nil {
		if int(c.Kind) >= len(toolChoiceNames) {
			return &HostError{Code: InvalidArgument, Message: "toolhost: toolChoice is tool-choice(" + strconv.Itoa(int(c.Kind)) + ")"}
		}
		if c.Kind == ToolChoiceNamed {
			if err := checkUTF8("toolChoice.val", c.Name); err != nil {
				return err
			}
		}
	}
	for i, s := range r.Stop {
		if err := checkUTF8(idx("stop", i), s); err != nil {
			return err
		}
	}
	return nil
}
