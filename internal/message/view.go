package message

import "time"

// View is a message's state, as the control API shows it.
type View struct {
	ID       string    `json:"id"`
	Agent    string    `json:"agent"`
	Session  string    `json:"session,omitempty"`
	Sender   string    `json:"sender"`
	Status   Status    `json:"status"`
	Accepted time.Time `json:"accepted"`
	// Reply is the reply's text: the deltas so far while it is open, the
	// whole reply once done.
	Reply string `json:"reply,omitempty"`
	// Error is the failure of a failed or cancelled message.
	Error *ErrorView `json:"error,omitempty"`
	// Events counts the reply's events so far (the last event's number).
	Events uint64 `json:"events"`
	// TraceID is the trace of the message's invoke_agent span, "" when
	// not traced.
	TraceID string `json:"trace_id,omitempty"`
}

// ErrorView is a failed reply's code and message.
type ErrorView struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// View returns the message's state now.
func (m *Message) View() View {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := View{ID: m.id, Agent: m.agent, Session: m.session, Sender: m.sender, Status: m.status,
		Accepted: m.accepted, Events: uint64(len(m.events))}
	if sc := m.SpanContext(); sc.IsSampled() {
		v.TraceID = sc.TraceID().String()
	}
	switch last := m.lastLocked(); {
	case last.Kind == KindReply:
		v.Reply = last.Text
	case last.Kind == KindError:
		v.Error = &ErrorView{Code: last.Code, Message: last.Text}
	default:
		v.Reply = string(m.deltas)
	}
	return v
}
