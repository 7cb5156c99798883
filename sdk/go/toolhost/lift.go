package toolhost

import (
	"encoding/binary"
	"strconv"
)

// Lifting: reading the values the host wrote into linear memory (a return
// area, and the strings and lists it allocated with cabi_realloc) into Go
// values. Every string is copied out, so that the memory can be released
// once a call's result is lifted. memory abstracts linear memory so that
// this file runs natively in the tests (a byte slice standing in for it).

// memory reads n bytes at a linear-memory address.
type memory interface {
	load(addr, n uint32) []byte
}

func u8(m memory, addr uint32) uint8 { return m.load(addr, 1)[0] }

func u32(m memory, addr uint32) uint32 { return binary.LittleEndian.Uint32(m.load(addr, 4)) }

// liftString reads the (ptr, len) pair at addr and copies the string out.
func liftString(m memory, addr uint32) string {
	ptr, n := u32(m, addr+offPtr), u32(m, addr+offLen)
	if n == 0 {
		return ""
	}
	return string(m.load(ptr, n))
}

// liftOptString reads an option<string> at addr: nil for none.
func liftOptString(m memory, addr uint32) *string {
	switch u8(m, addr+offOptStringDisc) {
	case 0:
		return nil
	case 1:
		s := liftString(m, addr+offOptStringVal)
		return &s
	}
	panic(abiError("option discriminant", u8(m, addr+offOptStringDisc)))
}

// liftList reads the (ptr, len) pair at addr and lifts each element of
// size elem with f.
func liftList[T any](m memory, addr, elem uint32, f func(memory, uint32) T) []T {
	ptr, n := u32(m, addr+offPtr), u32(m, addr+offLen)
	out := make([]T, n)
	for i := range n {
		out[i] = f(m, ptr+i*elem)
	}
	return out
}

func liftHostError(m memory, addr uint32) *HostError {
	code := u8(m, addr+offHostErrorCode)
	if int(code) >= len(codeNames) {
		panic(abiError("error-code", code))
	}
	return &HostError{Code: ErrorCode(code), Message: liftString(m, addr+offHostErrorMsg)}
}

func liftTool(m memory, addr uint32) Tool {
	return Tool{
		Name:        liftString(m, addr+offToolName),
		Description: liftOptString(m, addr+offToolDesc),
		InputSchema: liftString(m, addr+offToolSchema),
	}
}

func liftToolResult(m memory, addr uint32) ToolResult {
	return ToolResult{
		Name:      liftString(m, addr+offTRName),
		Arguments: liftString(m, addr+offTRArguments),
		Value:     liftString(m, addr+offTRValue),
	}
}

func liftResourceInfo(m memory, addr uint32) ResourceInfo {
	return ResourceInfo{
		URI:         liftString(m, addr+offRIURI),
		Name:        liftString(m, addr+offRIName),
		Description: liftOptString(m, addr+offRIDesc),
		MIMEType:    liftOptString(m, addr+offRIMIMEType),
	}
}

func liftResourceContent(m memory, addr uint32) ResourceContent {
	return ResourceContent{
		URI:      liftString(m, addr+offRCURI),
		MIMEType: liftOptString(m, addr+offRCMIMEType),
		Content:  liftString(m, addr+offRCContent),
	}
}

func liftToolCall(m memory, addr uint32) ToolCall {
	return ToolCall{
		ID:        liftString(m, addr+offTCID),
		Name:      liftString(m, addr+offTCName),
		Arguments: liftString(m, addr+offTCArguments),
	}
}

// liftEnum reads an enum of n cases at addr.
func liftEnum(m memory, addr uint32, n int, what string) uint8 {
	v := u8(m, addr)
	if int(v) >= n {
		panic(abiError(what, v))
	}
	return v
}

func liftMessage(m memory, addr uint32) Message {
	return Message{
		Role:       Role(liftEnum(m, addr+offMsgRole, len(roleNames), "role")),
		Content:    liftString(m, addr+offMsgContent),
		ToolCalls:  liftList(m, addr+offMsgToolCalls, sizeToolCall, liftToolCall),
		ToolCallID: liftOptString(m, addr+offMsgToolCall),
	}
}

func liftChatResponse(m memory, addr uint32) ChatResponse {
	return ChatResponse{
		Message:      liftMessage(m, addr+offRespMessage),
		FinishReason: FinishReason(liftEnum(m, addr+offRespFinish, len(finishNames), "finish-reason")),
		Usage: Usage{
			InputTokens:  u32(m, addr+offRespUsage+offUsageIn),
			OutputTokens: u32(m, addr+offRespUsage+offUsageOut),
		},
		Model: liftString(m, addr+offRespModel),
	}
}

func liftAgentMessage(m memory, addr uint32) AgentMessage {
	return AgentMessage{
		Sender:  liftString(m, addr+offAMSender),
		Session: liftOptString(m, addr+offAMSession),
		Content: liftString(m, addr+offAMContent),
	}
}

// liftResult reads a result<T, host-error> at addr, lifting the ok payload
// with ok.
func liftResult[T any](m memory, addr uint32, ok func(memory, uint32) T) (T, error) {
	var zero T
	switch d := u8(m, addr+offResultDisc); d {
	case 0:
		return ok(m, addr+offResultVal), nil
	case 1:
		return zero, liftHostError(m, addr+offResultVal)
	default:
		panic(abiError("result discriminant", d))
	}
}

func liftEvent(m memory, addr uint32) Event {
	p := addr + offEventVal
	switch d := u8(m, addr+offEventDisc); d {
	case caseToolResult:
		return ToolResultEvent{Result: liftToolResult(m, p)}
	case caseError:
		return ErrorEvent{Err: liftHostError(m, p)}
	case caseResourceListUpdated:
		return ResourceListUpdatedEvent{Resources: liftList(m, p, sizeResInfo, liftResourceInfo)}
	case caseResourceUpdated:
		return ResourceUpdatedEvent{Content: liftResourceContent(m, p)}
	case caseShutdown:
		return ShutdownEvent{}
	case caseChatDelta:
		return ChatDeltaEvent{Text: liftString(m, p)}
	case caseChatDone:
		return ChatDoneEvent{Response: liftChatResponse(m, p)}
	case caseMessage:
		return MessageEvent{Message: liftAgentMessage(m, p)}
	case caseReplyDelta:
		return ReplyDeltaEvent{Text: liftString(m, p)}
	case caseReply:
		return ReplyEvent{Content: liftString(m, p)}
	default:
		panic(abiError("event discriminant", d))
	}
}

// liftOptEnvelope reads an option<envelope> at addr.
func liftOptEnvelope(m memory, addr uint32) (Envelope, bool) {
	switch d := u8(m, addr+offOptEnvDisc); d {
	case 0:
		return Envelope{}, false
	case 1:
		p := addr + offOptEnvVal
		env := Envelope{ID: liftString(m, p+offEnvelopeID), Event: liftEvent(m, p+offEnvelopeEvent)}
		if _, ok := env.Event.(ShutdownEvent); ok {
			shutdownSeen = true
		}
		return env, true
	default:
		panic(abiError("option discriminant", d))
	}
}

func liftBool(b uint32) bool {
	switch b {
	case 0:
		return false
	case 1:
		return true
	}
	panic(abiError("bool", uint8(b)))
}

// abiError is the panic of a value the canonical ABI does not allow: the
// host and this package disagree on the world (a version mismatch).
func abiError(what string, v uint8) string {
	return "toolhost: invalid " + what + " " + strconv.Itoa(int(v)) + " from the host (toolhost:agent@0.3.0 mismatch)"
}
