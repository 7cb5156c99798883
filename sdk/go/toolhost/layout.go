package toolhost

// The canonical ABI layout of every value of the toolhost:agent@0.3.0 world
// that crosses linear memory, as the glue in lift.go and abi_wasip1.go uses
// it. All of it follows from three rules of the component model's canonical
// ABI (CanonicalABI.md, "Alignment" and "Element Size"):
//
//   - string and list<T> are (ptr: u32, len: u32): size 8, alignment 4; a
//     string's len counts UTF-8 bytes, a list's counts elements of
//     element-size each, laid out one after another;
//   - an enum with up to 256 cases, a bool and an option/result/variant
//     discriminant are one byte; a record lays its fields out in order,
//     each at the next multiple of its alignment, and its size is rounded
//     up to its alignment (the largest of its fields');
//   - option<T>, result<T, E> and a variant are a discriminant followed by
//     the payload at the next multiple of the largest payload alignment;
//     their size is rounded up to that alignment.
//
// Every record, option, result and variant here has alignment 4 (its
// largest member is a string, a list, a u32 or an f32). own<tooling>,
// own<provider> and borrow<provider> are i32 handles (size 4). layout_test.go recomputes every
// constant below from a description of the WIT types with those rules.

// string and list<T>.
const (
	sizeString = 8
	offPtr     = 0
	offLen     = 4
)

// option<string>: discriminant (0 none, 1 some), then the string.
const (
	sizeOptString    = 12
	offOptStringDisc = 0
	offOptStringVal  = 4
)

// record host-error { code: error-code, message: string }.
const (
	sizeHostError    = 12
	offHostErrorCode = 0
	offHostErrorMsg  = 4
)

// record tool { name, description: option<string>, input-schema }.
const (
	sizeTool       = 28
	offToolName    = 0
	offToolDesc    = 8
	offToolSchema  = 20
	sizeToolResult = 24
	offTRName      = 0
	offTRArguments = 8
	offTRValue     = 16
	sizeResInfo    = 40
	offRIURI       = 0
	offRIName      = 8
	offRIDesc      = 16
	offRIMIMEType  = 28
	sizeResContent = 28
	offRCURI       = 0
	offRCMIMEType  = 8
	offRCContent   = 20
)

// result<T, host-error> for every T the world uses (string/uuid, list,
// tool-result, resource-content, own<tooling>): discriminant (0 ok, 1 err),
// payload at 4.
const (
	offResultDisc         = 0
	offResultVal          = 4
	sizeResultString      = 16 // result<string, host-error>, result<list<_>, host-error>
	sizeResultHandle      = 16 // result<own<tooling>, host-error>
	sizeResultToolResult  = 28
	sizeResultResContent  = 32
	sizeResultChatResp    = 56
	sizeRunResult         = 12 // result<string, string>, the run export's return area
	offRunResultDisc      = 0
	offRunResultVal       = 4
	sizeLargestReturnArea = 68 // option<envelope>
)

// The provider interface's records. option<u32> and option<f32> are a
// discriminant and the value at 4 (size 8); option<tool-choice> a
// discriminant and the variant at 4, whose own discriminant is followed by
// named's string at 4 (size 12, 16 with the option).
const (
	sizeToolCall    = 24 // record tool-call { id, name, arguments }
	offTCID         = 0
	offTCName       = 8
	offTCArguments  = 16
	sizeMessage     = 32 // record message { role, content, tool-calls, tool-call-id }
	offMsgRole      = 0
	offMsgContent   = 4
	offMsgToolCalls = 12
	offMsgToolCall  = 20
	sizeChatRequest = 68 // record chat-request
	offReqModel     = 0
	offReqMessages  = 12
	offReqTools     = 20
	offReqChoice    = 28
	offReqMaxTokens = 44
	offReqTemp      = 52
	offReqStop      = 60
	offOptVal       = 4 // of option<u32>, option<f32>, option<tool-choice>
	offChoiceVal    = 4 // named's string in tool-choice
	sizeUsage       = 8 // record usage { input-tokens, output-tokens }
	offUsageIn      = 0
	offUsageOut     = 4
	sizeChatResp    = 52 // record chat-response { message, finish-reason, usage, model }
	offRespMessage  = 0
	offRespFinish   = 32
	offRespUsage    = 36
	offRespModel    = 44
	// chat and chat-stream take (self: borrow<provider>, request:
	// chat-request), which flattens to 18 values, more than the 16 the
	// canonical ABI passes flat: the tuple is passed by address instead.
	sizeChatParams = 72
	offParamsSelf  = 0
	offParamsReq   = 4
)

// variant event and record envelope { id: uuid, event: event }, and
// option<envelope>.
const (
	sizeEvent        = 56
	offEventDisc     = 0
	offEventVal      = 4
	sizeEnvelope     = 64
	offEnvelopeID    = 0
	offEnvelopeEvent = 8
	sizeOptEnvelope  = 68
	offOptEnvDisc    = 0
	offOptEnvVal     = 4
)

// The event variant's case indices, in WIT order.
const (
	caseToolResult uint8 = iota
	caseError
	caseResourceListUpdated
	caseResourceUpdated
	caseShutdown
	caseChatDelta
	caseChatDone
	caseMessage
	caseReplyDelta
	caseReply
	numEventCases
)

// record agent-message { sender: string, session: option<string>,
// content: string }: the message case's payload.
const (
	sizeAgentMessage = 28
	offAMSender      = 0
	offAMSession     = 8
	offAMContent     = 20
)

// The messages interface's results: reply-delta, reply and reply-error
// return result<_, host-error> (the ok case has no payload); send returns
// result<uuid, host-error> (sizeResultString).
const sizeResultUnit = 16
