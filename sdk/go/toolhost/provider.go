package toolhost

import "runtime"

// Provider is a handle on one configured model provider (the WIT resource
// provider): the host holds the endpoint and its key, the agent sees
// neither. Close drops it, which cancels the streams started through it.
// After Close, Chat and ChatStream return ErrClosed, Kind and Name "",
// IsOpen and Cancel false, and Close nil again.
type Provider struct{ x handle }

// GetProvider returns a new handle on the named provider: a *HostError
// with code NotFound if it is not configured, Denied if this agent was not
// granted it, InvalidArgument if name is not valid UTF-8.
func GetProvider(name string) (*Provider, error) {
	h, err := getHandle("the provider name", name, rawProviderGet)
	if err != nil {
		return nil, err
	}
	return &Provider{x: handle{h: h}}, nil
}

// Close drops the handle. It returns nil, also when called again.
func (p *Provider) Close() error {
	p.x.close(rawProviderDrop)
	return nil
}

// Kind is the provider's model API, "openai" or "anthropic".
func (p *Provider) Kind() string { return p.x.stringOf(rawProviderKind) }

// Name is the provider's configured name.
func (p *Provider) Name() string { return p.x.stringOf(rawProviderName) }

// Chat sends the request and waits for the whole response. A request
// holding a string that is not valid UTF-8, or a Role or ToolChoice kind
// the WIT does not have, is refused with InvalidArgument before it is
// sent.
func (p *Provider) Chat(req *ChatRequest) (*ChatResponse, error) {
	r, err := chatCall(p, req, rawChat, liftChatResponse)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// ChatStream validates and queues the request (refused as for Chat) and
// returns its id at once. Zero or more ChatDeltaEvent envelopes with that
// id follow, then exactly one ChatDoneEvent or ErrorEvent, unless the
// stream is cancelled first; the deltas' text, concatenated, is the
// response's text.
func (p *Provider) ChatStream(req *ChatRequest) (id string, err error) {
	return chatCall(p, req, rawChatStream, liftString)
}

// IsOpen is true from ChatStream until its terminal envelope is enqueued
// or the stream is cancelled; false for unknown ids.
func (p *Provider) IsOpen(id string) bool { return p.x.boolOf(id, rawProviderIsOpen) }

// Cancel is true if the stream was open or an envelope of it undelivered;
// no envelope with that id is received after it returns true.
func (p *Provider) Cancel(id string) bool { return p.x.boolOf(id, rawProviderCancel) }

// chatCall lowers (self, req) into a block of its own, passes its address
// and lifts a result<T, host-error>.
func chatCall[T any](p *Provider, req *ChatRequest, raw func(params, ret uint32), ok func(memory, uint32) T) (T, error) {
	var v T
	if err := checkChatRequest(req); err != nil {
		return v, err
	}
	// The block is made before the call (h never changes; closed is
	// checked under the lock by resultOf).
	params, mem := placeParams(lowerChatParams(p.x.h, req))
	defer runtime.KeepAlive(mem)
	return resultOf(&p.x, func(_, ret uint32) { raw(params, ret) }, ok)
}
