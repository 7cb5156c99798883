package inbox

import (
	"errors"
	"testing"

	"github.com/toolhostd/toolhostd/internal/tooling"
)

func TestPutMessage(t *testing.T) {
	q := New(2)
	if err := q.Put("m1", Message{Sender: "api", Content: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := q.Put("m1", Message{}); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate id: %v", err)
	}
	if err := q.Reserve("c1"); err != nil {
		t.Fatal(err)
	}
	if err := q.Put("m2", Message{}); !errors.Is(err, ErrFull) {
		t.Fatalf("a message takes capacity like a call: %v", err)
	}
	env, ok := q.TryRecv()
	if m, isMsg := env.Event.(Message); !ok || env.ID != "m1" || !isMsg || m.Content != "a" {
		t.Fatalf("got %+v", env)
	}
	if err := q.Put("m2", Message{}); err != nil {
		t.Fatalf("received messages free their capacity: %v", err)
	}
	// Cancel of an undelivered message replaces it in place; of a received
	// one, it is enqueued.
	cancelled := Error{Err: tooling.Error{Code: tooling.CodeCancelled, Message: "x"}}
	q.CancelMessage("m2", cancelled)
	q.CancelMessage("m1", cancelled)
	for _, want := range []string{"m2", "m1"} {
		env, ok := q.TryRecv()
		if e, isErr := env.Event.(Error); !ok || env.ID != want || !isErr || e.Err.Code != tooling.CodeCancelled {
			t.Fatalf("want the cancel of %s, got %+v", want, env)
		}
	}
	q.Shutdown()
	if err := q.Put("m3", Message{}); !errors.Is(err, ErrShutdown) {
		t.Fatalf("after shutdown: %v", err)
	}
	if q.CancelMessage("m2", cancelled) {
		t.Fatal("CancelMessage after shutdown")
	}
}

func TestReplyStream(t *testing.T) {
	q := New(4)
	if err := q.ReserveReply("s"); err != nil {
		t.Fatal(err)
	}
	if err := q.ReserveChat("c"); err != nil {
		t.Fatal(err)
	}
	if !q.ReservedReply("s") || q.ReservedReply("c") {
		t.Fatal("ReservedReply: only the reply stream")
	}
	q.Delta("s", "a")
	q.Delta("s", "b") // merged while undelivered
	q.Delta("c", "x")
	q.Deliver("s", Reply{Text: "ab"})
	want := []Event{ReplyDelta{Text: "ab"}, ChatDelta{Text: "x"}, Reply{Text: "ab"}}
	for i, w := range want {
		env, ok := q.TryRecv()
		if !ok || env.Event != w {
			t.Fatalf("envelope %d: got %+v, want %+v", i, env.Event, w)
		}
	}
	if q.ReservedReply("s") {
		t.Fatal("reply stream still open after its terminal envelope")
	}
}
