// Package talker is a message.Agents for the protocol endpoints' tests:
// its agents are goroutines that answer through a real inbox and Mailbox,
// as a guest would. "words A B C" streams each word as a delta then replies
// "."; "session" replies with the message's session; "fail" ends with
// reply-error; "hold" streams "holding " and waits for Release (or the
// message's cancel); "block" does the same but holds the guest itself, so
// that it reads nothing more from its inbox until Release; anything else is
// echoed.
package talker

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Talker serves the agents it was made with.
type Talker struct {
	targets map[string]message.Target
	in      *inbox.Inbox
	mb      *message.Mailbox
	release chan struct{}
	once    sync.Once
	done    chan struct{}
}

// New is a talker serving agents (name -> target), all from one inbox of
// capacity; t's cleanup stops it.
func New(t testing.TB, capacity int, agents map[string]message.Target) *Talker {
	in := inbox.New(capacity)
	tk := &Talker{targets: agents, in: in, mb: message.NewMailbox(in, nil), release: make(chan struct{}), done: make(chan struct{})}
	go tk.guest()
	t.Cleanup(func() { tk.Release(); in.Shutdown(); <-tk.done })
	return tk
}

// Release lets every held message reply "released".
func (tk *Talker) Release() { tk.once.Do(func() { close(tk.release) }) }

// Pending is how many envelopes wait in the agents' inbox.
func (tk *Talker) Pending() int { return tk.in.Pending() }

// Target implements message.Agents.
func (tk *Talker) Target(agent string) (message.Target, error) {
	if t, ok := tk.targets[agent]; ok {
		return t, nil
	}
	return message.Target{}, message.Refuse(message.ErrUnknownAgent, tooling.CodeNotFound, "no agent %q", agent)
}

// Deliver implements message.Agents.
func (tk *Talker) Deliver(_ context.Context, m *message.Message) error { return tk.mb.Put(m) }

func (tk *Talker) guest() {
	defer close(tk.done)
	for {
		env, ok := tk.in.Recv(context.Background(), nil)
		if !ok {
			return
		}
		msg, ok := env.Event.(inbox.Message)
		if !ok {
			continue
		}
		switch words := strings.Fields(msg.Content); {
		case len(words) > 0 && words[0] == "words":
			for _, w := range words[1:] {
				_ = tk.mb.Delta(env.ID, w+" ")
			}
			_ = tk.mb.Reply(env.ID, ".")
		case msg.Content == "session":
			s := ""
			if msg.Session != nil {
				s = *msg.Session
			}
			_ = tk.mb.Reply(env.ID, s)
		case msg.Content == "fail":
			_ = tk.mb.Fail(env.ID, "cannot do that")
		case msg.Content == "hold":
			_ = tk.mb.Delta(env.ID, "holding ")
			go tk.hold(env.ID)
		case msg.Content == "block":
			_ = tk.mb.Delta(env.ID, "holding ")
			tk.hold(env.ID)
		default:
			_ = tk.mb.Reply(env.ID, msg.Content)
		}
	}
}

// hold replies to id once released (a cancelled id's reply is refused).
func (tk *Talker) hold(id string) {
	select {
	case <-tk.release:
		_ = tk.mb.Reply(id, "released")
	case <-tk.in.Done():
	}
}
