package inbox

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/provider"
)

func done(text string) Event {
	return ChatDone{Response: provider.Response{Message: provider.Message{Role: provider.RoleAssistant, Content: text}, Model: "m"}}
}

// TestChatDeltasMerge: undelivered deltas of one stream merge into one
// envelope, in order, before the terminal one; deltas of two streams stay
// apart, and a delivered delta is not extended.
func TestChatDeltasMerge(t *testing.T) {
	tests := []struct {
		name string
		ops  []string // "d <id> <text>", "r" (receive), "end <id>"
		want []string // received: "<id> delta <text>" or "<id> done"
	}{
		{"merged while undelivered", []string{"d a he", "d a ll", "d a o", "end a", "r", "r"},
			[]string{"a delta hello", "a done"}},
		{"split by a receive", []string{"d a he", "r", "d a llo", "end a", "r", "r"},
			[]string{"a delta he", "a delta llo", "a done"}},
		{"two streams apart", []string{"d a 1", "d b x", "d a 2", "d b y", "end b", "end a", "r", "r", "r", "r"},
			[]string{"a delta 12", "b delta xy", "b done", "a done"}},
		{"no delta after the end", []string{"d a 1", "end a", "d a 2", "r", "r", "r"},
			[]string{"a delta 1", "a done", "none"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := New(4)
			for _, id := range []string{"a", "b"} {
				if err := q.ReserveChat(id); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for _, op := range tc.ops {
				f := strings.SplitN(op, " ", 3)
				switch f[0] {
				case "d":
					q.Delta(f[1], f[2])
				case "end":
					if !q.Deliver(f[1], done("x")) {
						t.Fatalf("Deliver(%s) = false", f[1])
					}
				case "r":
					env, ok := q.TryRecv()
					switch ev := env.Event.(type) {
					case nil:
						if ok {
							t.Fatal("an envelope without an event")
						}
						got = append(got, "none")
					case ChatDelta:
						got = append(got, env.ID+" delta "+ev.Text)
					case ChatDone:
						got = append(got, env.ID+" done")
					default:
						t.Fatalf("unexpected %T", ev)
					}
				}
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("received %q, want %q", got, tc.want)
			}
		})
	}
}

// TestChatCancel: cancel drops a stream's undelivered delta and terminal
// envelope and ends its deltas; true once, false after.
func TestChatCancel(t *testing.T) {
	for _, ended := range []bool{false, true} {
		t.Run(fmt.Sprint("ended=", ended), func(t *testing.T) {
			q := New(4)
			if err := q.ReserveChat("a"); err != nil {
				t.Fatal(err)
			}
			q.Delta("a", "some text")
			if ended {
				q.Deliver("a", done("some text"))
			}
			if !q.Cancel("a") {
				t.Fatal("Cancel = false, want true")
			}
			if q.Delta("a", "more") {
				t.Fatal("Delta after Cancel = true")
			}
			if q.Cancel("a") {
				t.Fatal("second Cancel = true")
			}
			mustNone(t, q)
			if p := q.Pending(); p != 0 {
				t.Fatalf("Pending = %d after cancel", p)
			}
			if err := q.ReserveChat("a"); err != nil { // the id is free again
				t.Fatal(err)
			}
		})
	}
}

// TestChatBound: a stream's deltas take no capacity beyond its one
// reservation, however many arrive, and while nothing is received the
// inbox holds at most capacity + one delta per stream.
func TestChatBound(t *testing.T) {
	const capacity, streams, deltas = 8, 5, 1000
	q := New(capacity)
	for i := range streams {
		if err := q.ReserveChat(fmt.Sprint("s", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range capacity - streams {
		if err := q.Reserve(fmt.Sprint("c", i)); err != nil {
			t.Fatal(err)
		}
		q.Deliver(fmt.Sprint("c", i), result(i))
	}
	var sent [streams]strings.Builder
	for n := range deltas {
		for i := range streams {
			text := fmt.Sprintf("<%d.%d>", i, n)
			if !q.Delta(fmt.Sprint("s", i), text) {
				t.Fatalf("Delta refused on open stream s%d", i)
			}
			sent[i].WriteString(text)
		}
		if p := q.Pending(); p > capacity+streams {
			t.Fatalf("after %d rounds %d envelopes are held, bound %d", n, p, capacity+streams)
		}
	}
	if err := q.Reserve("over"); !errors.Is(err, ErrFull) {
		t.Fatalf("Reserve over capacity = %v, want ErrFull", err)
	}
	for i := range streams {
		q.Deliver(fmt.Sprint("s", i), done(sent[i].String()))
	}
	if p := q.Pending(); p != capacity+streams {
		t.Fatalf("Pending = %d, want %d", p, capacity+streams)
	}
	var got [streams]strings.Builder
	for {
		env, ok := q.TryRecv()
		if !ok {
			break
		}
		if d, ok := env.Event.(ChatDelta); ok {
			var i int
			fmt.Sscanf(env.ID, "s%d", &i)
			got[i].WriteString(d.Text)
		}
	}
	for i := range streams {
		if got[i].String() != sent[i].String() {
			t.Fatalf("stream %d: received %d bytes of text, sent %d", i, got[i].Len(), sent[i].Len())
		}
	}
	if st := q.Stats(); st.Merged != streams*(deltas-1) {
		t.Fatalf("Merged = %d, want %d", st.Merged, streams*(deltas-1))
	}
}

// FuzzChatStreams drives chat streams, calls and receives in any order
// and checks the stream invariants: the received deltas of a stream not
// cancelled concatenate to what was sent and come before its one
// terminal envelope; nothing of a stream arrives after a cancel returned
// true; the inbox never holds more than capacity + one delta per stream.
func FuzzChatStreams(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 1, 0, 5, 0, 2, 0, 5, 5, 5})
	f.Add([]byte{0, 1, 0, 2, 1, 1, 1, 2, 3, 1, 4, 2, 5, 5, 5, 6, 5})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const capacity, ids = 3, 4
		q := New(capacity)
		type stream struct {
			sent, got  strings.Builder
			open, done bool // reserved; terminal received
			cancelled  bool
			ended      bool // Deliver returned true
		}
		ss := map[string]*stream{}
		for i := 0; i+1 < len(ops); i += 2 {
			id := fmt.Sprint("s", ops[i+1]%ids)
			s := ss[id]
			switch ops[i] % 7 {
			case 0:
				if s != nil && !s.done && !s.cancelled {
					continue
				}
				if q.ReserveChat(id) == nil {
					ss[id] = &stream{open: true}
				}
			case 1, 2:
				text := fmt.Sprint(i, ";")
				ok := q.Delta(id, text)
				if s != nil && s.open && !ok {
					t.Fatalf("op %d: Delta refused on open stream %s", i, id)
				}
				if ok {
					s.sent.WriteString(text)
				}
			case 3:
				if q.Deliver(id, done("")) {
					s.open, s.ended = false, true
				}
			case 4:
				if q.Cancel(id) && s != nil {
					s.cancelled, s.open = true, false
				}
			case 5, 6:
				env, ok := q.TryRecv()
				if !ok {
					continue
				}
				r := ss[env.ID]
				if r == nil || r.cancelled || r.done {
					t.Fatalf("op %d: received %+v for a stream cancelled or done", i, env)
				}
				switch ev := env.Event.(type) {
				case ChatDelta:
					r.got.WriteString(ev.Text)
				case ChatDone:
					r.done = true
					if r.got.String() != r.sent.String() {
						t.Fatalf("op %d: %s ended with %q received, %q sent", i, env.ID, r.got.String(), r.sent.String())
					}
				}
			}
			if p := q.Pending(); p > capacity+ids {
				t.Fatalf("op %d: %d envelopes held, bound %d", i, p, capacity+ids)
			}
		}
	})
}

// BenchmarkChatDelta: one delta at a time through the inbox, received
// before the next (recv) or merged into an undelivered one (merge).
func BenchmarkChatDelta(b *testing.B) {
	for _, merge := range []bool{false, true} {
		name := "recv"
		if merge {
			name = "merge"
		}
		b.Run(name, func(b *testing.B) {
			q := New(16)
			if err := q.ReserveChat("s"); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				q.Delta("s", "a token ")
				if !merge || i%4096 == 0 {
					q.TryRecv()
				}
			}
		})
	}
}
