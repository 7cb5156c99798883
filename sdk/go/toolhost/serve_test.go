package toolhost

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// fakeInbox is a queue of envelopes standing in for the host's inbox, and
// a record of the replies written through Messages.
type fakeInbox struct {
	queue   []Envelope
	waits   []time.Duration
	replies []string // "delta id text", "reply id text", "error id text"
	failOn  string   // a reply call for this id returns Cancelled
	shut    bool     // the shutdown envelope was delivered
}

// recv is the host's recv: none after the shutdown envelope was delivered.
func (f *fakeInbox) recv(d time.Duration) (Envelope, bool) {
	f.waits = append(f.waits, d)
	if len(f.queue) == 0 || f.shut {
		return Envelope{}, false
	}
	env := f.queue[0]
	f.queue = f.queue[1:]
	_, f.shut = env.Event.(ShutdownEvent)
	return env, true
}

func (f *fakeInbox) record(kind, id, text string) error {
	f.replies = append(f.replies, kind+" "+id+" "+text)
	if id == f.failOn {
		return &HostError{Code: Cancelled, Message: "cancelled by its sender"}
	}
	return nil
}

func (f *fakeInbox) ReplyDelta(id, text string) error    { return f.record("delta", id, text) }
func (f *fakeInbox) Reply(id, content string) error      { return f.record("reply", id, content) }
func (f *fakeInbox) ReplyError(id, message string) error { return f.record("error", id, message) }

func (f *fakeInbox) inbox() *Inbox { return &Inbox{recv: f.recv, msgs: f} }

func msg(id, content string) Envelope {
	return Envelope{ID: id, Event: MessageEvent{Message: AgentMessage{Sender: "api", Content: content}}}
}

var shutdown = Envelope{ID: ShutdownID, Event: ShutdownEvent{}}

func TestInboxWaitFor(t *testing.T) {
	f := &fakeInbox{queue: []Envelope{msg("m1", "a"), {ID: "c", Event: ChatDeltaEvent{Text: "x"}}, msg("m2", "b"), {ID: "c", Event: ReplyEvent{Content: "y"}}}}
	in := f.inbox()
	env, ok := in.WaitFor("c", time.Second)
	if !ok || env.Event != (ChatDeltaEvent{Text: "x"}) || in.Held() != 1 {
		t.Fatalf("WaitFor(c) = %v %+v, held %d", ok, env, in.Held())
	}
	// Held envelopes come first, in order; a wait for an id not there
	// holds everything it receives.
	if _, ok := in.WaitFor("nobody", 0); ok || in.Held() != 3 {
		t.Fatalf("WaitFor(nobody) = %v, held %d, want false and 3", ok, in.Held())
	}
	if env, _ := in.WaitFor("c", 0); env.Event != (ReplyEvent{Content: "y"}) {
		t.Fatalf("WaitFor(c) from the held ones = %+v", env)
	}
	for _, want := range []string{"m1", "m2"} {
		if env, ok := in.Recv(0); !ok || env.ID != want {
			t.Fatalf("Recv = %v %+v, want %s", ok, env, want)
		}
	}
	// The shutdown envelope ends any wait and is remembered.
	f.queue = []Envelope{msg("m3", "c"), shutdown}
	if env, ok := in.WaitFor("c", Forever); !ok || env.ID != ShutdownID || !in.Shutdown() || in.Held() != 1 {
		t.Fatalf("WaitFor at shutdown = %v %+v, shutdown %v, held %d", ok, env, in.Shutdown(), in.Held())
	}
	if f.waits[len(f.waits)-1] != Forever {
		t.Errorf("WaitFor(Forever) waited %v", f.waits[len(f.waits)-1])
	}
}

func TestInboxFollow(t *testing.T) {
	resp := ChatResponse{Message: Message{Role: RoleAssistant, Content: "hello"}, Model: "m"}
	for _, tc := range []struct {
		name   string
		queue  []Envelope
		chat   bool
		deltas []string
		want   string
		err    error
	}{
		{"reply", []Envelope{{ID: "s", Event: ReplyDeltaEvent{Text: "he"}}, msg("m", "held"), {ID: "s", Event: ReplyDeltaEvent{Text: "l"}}, {ID: "s", Event: ReplyEvent{Content: "lo"}}},
			false, []string{"he", "l"}, "hello", nil},
		{"reply without deltas", []Envelope{{ID: "s", Event: ReplyEvent{Content: "all"}}}, false, nil, "all", nil},
		{"reply error", []Envelope{{ID: "s", Event: ReplyDeltaEvent{Text: "x"}}, {ID: "s", Event: ErrorEvent{Err: &HostError{Code: Internal, Message: "boom"}}}},
			false, []string{"x"}, "", Internal},
		{"reply shutdown", []Envelope{shutdown}, false, nil, "", ErrShutdown},
		{"reply timeout", nil, false, nil, "", Timeout},
		{"reply after shutdown", []Envelope{msg("m", "held"), shutdown}, false, nil, "", ErrShutdown},
		{"chat", []Envelope{{ID: "s", Event: ChatDeltaEvent{Text: "hel"}}, {ID: "s", Event: ChatDeltaEvent{Text: "lo"}}, {ID: "s", Event: ChatDoneEvent{Response: resp}}},
			true, []string{"hel", "lo"}, "hello", nil},
		{"chat error", []Envelope{{ID: "s", Event: ErrorEvent{Err: &HostError{Code: Unavailable, Message: "down"}}}}, true, nil, "", Unavailable},
		{"chat gets a reply", []Envelope{{ID: "s", Event: ReplyEvent{Content: "?"}}}, true, nil, "", Protocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeInbox{queue: tc.queue}
			in := f.inbox()
			var deltas []string
			on := func(s string) error { deltas = append(deltas, s); return nil }
			var got string
			var err error
			if tc.chat {
				var r *ChatResponse
				if r, err = in.StreamChat("s", time.Second, on); r != nil {
					got = r.Text()
				}
			} else {
				got, err = in.ReplyOf("s", 50*time.Millisecond, on)
			}
			if got != tc.want || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) || !reflect.DeepEqual(deltas, tc.deltas) {
				t.Fatalf("got %q, %v, deltas %q; want %q, %v, %q", got, err, deltas, tc.want, tc.err, tc.deltas)
			}
		})
	}
	// An error of onDelta stops the wait.
	stop := errors.New("stop")
	f := &fakeInbox{queue: []Envelope{{ID: "s", Event: ReplyDeltaEvent{Text: "a"}}, {ID: "s", Event: ReplyEvent{Content: "b"}}}}
	if _, err := f.inbox().ReplyOf("s", Forever, func(string) error { return stop }); err != stop || len(f.queue) != 1 {
		t.Fatalf("ReplyOf with a failing onDelta: %v, %d left", err, len(f.queue))
	}
}

func TestServe(t *testing.T) {
	f := &fakeInbox{failOn: "m5", queue: []Envelope{
		msg("m1", "echo me"),
		{ID: "t", Event: ToolResultEvent{}}, // not a message: dropped
		msg("m2", "stream"),
		msg("m3", "fail"),
		msg("m4", "nothing"),
		msg("m5", "cancelled"),
		{ID: "c", Event: ChatDeltaEvent{Text: "one "}},
		msg("m6", "after"), // arrives while m6's handler waits: served next
		{ID: "c", Event: ChatDoneEvent{Response: ChatResponse{Message: Message{Content: "one two"}}}},
		shutdown,
		msg("m7", "never"),
	}}
	var seen []string
	err := f.inbox().Serve(func(m Incoming, r *Replier) error {
		seen = append(seen, m.ID+":"+m.Content)
		if r.ID() != m.ID || m.Sender != "api" {
			t.Errorf("message %+v, replier for %s", m, r.ID())
		}
		switch m.Content {
		case "echo me":
			return r.End(m.Content)
		case "stream":
			for _, w := range []string{"a ", "b "} {
				if err := r.Delta(w); err != nil {
					return err
				}
			}
			return r.End("c")
		case "fail":
			return errors.New("no \xff way")
		case "cancelled":
			if err := r.Delta("x"); !errors.Is(err, Cancelled) {
				t.Errorf("a delta to a cancelled message: %v", err)
			}
			// Follows a chat-stream as Replier.StreamChat does.
			resp, err := r.inbox.StreamChat("c", Forever, func(string) error { return nil })
			if err != nil || resp.Text() != "one two" {
				t.Errorf("StreamChat in a handler: %v, %v", resp, err)
			}
			return nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantSeen := []string{"m1:echo me", "m2:stream", "m3:fail", "m4:nothing", "m5:cancelled", "m6:after"}
	if !reflect.DeepEqual(seen, wantSeen) {
		t.Errorf("served %q, want %q", seen, wantSeen)
	}
	want := []string{
		"reply m1 echo me",
		"delta m2 a ", "delta m2 b ", "reply m2 c",
		"error m3 no \uFFFD way",
		"reply m4 ",
		"delta m5 x", "reply m5 ",
		"reply m6 ",
	}
	if !reflect.DeepEqual(f.replies, want) {
		t.Errorf("replies\n  %q\nwant\n  %q", f.replies, want)
	}
	if len(f.queue) != 1 {
		t.Errorf("Serve received past the shutdown envelope: %d left", len(f.queue))
	}
}

// TestServeShutdownInHandler: a shutdown envelope that arrives while a
// handler waits ends Serve after it; the messages held meanwhile are
// failed, not left without a reply.
func TestServeShutdownInHandler(t *testing.T) {
	f := &fakeInbox{queue: []Envelope{msg("m1", "wait"), msg("m2", "held"), {ID: "t", Event: ToolResultEvent{}}, shutdown, msg("m3", "never")}}
	in := f.inbox()
	err := in.Serve(func(m Incoming, r *Replier) error {
		if _, err := in.StreamChat("c", Forever, nil); !errors.Is(err, ErrShutdown) {
			t.Errorf("StreamChat at shutdown: %v", err)
		}
		// After the shutdown envelope nothing more is received.
		if _, ok := in.WaitFor("c", Forever); ok {
			t.Error("WaitFor after shutdown returned an envelope")
		}
		return errors.New("stopping")
	})
	want := []string{"error m1 stopping", "error m2 the agent is stopping"}
	if err != nil || !reflect.DeepEqual(f.replies, want) || in.Held() != 0 || len(f.queue) != 1 {
		t.Errorf("Serve = %v, replies %q (want %q), held %d, %d left", err, f.replies, want, in.Held(), len(f.queue))
	}
}

func TestMessagesInvalidUTF8(t *testing.T) {
	bad := "x\xc3"
	for name, f := range map[string]func() error{
		"Send to":         func() error { _, err := Messages.Send(bad, "hi", nil); return err },
		"Send content":    func() error { _, err := Messages.Send("a", bad, nil); return err },
		"Send session":    func() error { _, err := Messages.Send("a", "hi", &bad); return err },
		"Reply id":        func() error { return Messages.Reply(bad, "hi") },
		"Reply content":   func() error { return Messages.Reply("id", bad) },
		"ReplyDelta text": func() error { return Messages.ReplyDelta("id", bad) },
		"ReplyError":      func() error { return Messages.ReplyError("id", bad) },
	} {
		var he *HostError
		if err := f(); !errors.As(err, &he) || he.Code != InvalidArgument || he.Message == "" {
			t.Errorf("%s: %v, want invalid-argument", name, err)
		}
	}
	if Messages.IsOpen(bad) || Messages.Cancel(bad) {
		t.Error("an invalid id was reported open")
	}
}

// TestLiftMessageEnvelopes lifts the new cases of event as the generic
// writer lays them out (abitree_test.go), independently of layout.go.
func TestLiftMessageEnvelopes(t *testing.T) {
	noneCase := noneT()
	tEvent := variant(noneCase, noneCase, noneCase, noneCase, noneCase, tString, tChatResponse, tAgentMessage, tString, tString)
	tOptEnvelope := option(record(tString, tEvent))
	for _, tc := range []struct {
		ev   vcase
		want Event
	}{
		{vcase{7, []any{"agent:a", some("s"), "hi"}}, MessageEvent{Message: AgentMessage{Sender: "agent:a", Session: ptr("s"), Content: "hi"}}},
		{vcase{7, []any{"mcp", none, ""}}, MessageEvent{Message: AgentMessage{Sender: "mcp"}}},
		{vcase{8, "déjà"}, ReplyDeltaEvent{Text: "déjà"}},
		{vcase{9, ""}, ReplyEvent{}},
	} {
		m := &fakeMemory{}
		area := m.alloc(tOptEnvelope.size(), tOptEnvelope.align())
		writeTree(m, area, tOptEnvelope, some([]any{"id-1", tc.ev}))
		env, ok := liftOptEnvelope(m, area)
		if !ok || env.ID != "id-1" || !reflect.DeepEqual(env.Event, tc.want) {
			t.Errorf("lifted %v %+v, want %+v", ok, env, tc.want)
		}
	}
}

func TestToolResultText(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{`{"content":[{"type":"text","text":"a"},{"type":"image","data":"x"},{"type":"text","text":"b"}]}`, "a b"},
		{`{"content":[{"type":"text","text":"nope"}],"isError":true}`, "error: nope"},
		{`not json`, "not json"},
	} {
		if got := resultText(&ToolResult{Value: tc.value}); got != tc.want {
			t.Errorf("resultText(%s) = %q, want %q", tc.value, got, tc.want)
		}
	}
}
