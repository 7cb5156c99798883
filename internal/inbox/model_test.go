package inbox

import (
	"errors"
	"fmt"
	"testing"

	"github.com/toolhostd/toolhostd/internal/tooling"
)

// FuzzInbox runs a random sequence of operations against the inbox and a
// plain model of the contract's rules.
func FuzzInbox(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add([]byte{0, 0, 0, 0, 0, 1, 1, 5, 5, 5, 6, 9, 9, 9, 9, 10, 9, 9})
	f.Add([]byte{4, 20, 5, 21, 5, 22, 0, 1, 9, 6, 9, 8, 9, 9})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const capacity = 4
		q := New(capacity)
		m := newModel(capacity)
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%11, ops[i+1]
			id := fmt.Sprintf("id%d", arg%6)
			ev := result(int(arg))
			if op == 4 || op == 5 {
				ev = content(fmt.Sprint(i))
			}
			switch op {
			case 0:
				got, want := q.Reserve(id), m.reserve(id)
				if !errors.Is(got, want) {
					t.Fatalf("op %d Reserve(%s) = %v, model %v", i, id, got, want)
				}
			case 1:
				if got, want := q.Deliver(id, ev), m.deliver(id, ev); got != want {
					t.Fatalf("op %d Deliver(%s) = %v, model %v", i, id, got, want)
				}
			case 2:
				if got, want := q.Cancel(id), m.cancel(id); got != want {
					t.Fatalf("op %d Cancel(%s) = %v, model %v", i, id, got, want)
				}
			case 3:
				got, want := q.OpenStream(id), m.openStream(id)
				if !errors.Is(got, want) {
					t.Fatalf("op %d OpenStream(%s) = %v, model %v", i, id, got, want)
				}
			case 4, 5:
				if got, want := q.Update(id, ev), m.update(id, ev); got != want {
					t.Fatalf("op %d Update(%s) = %v, model %v", i, id, got, want)
				}
			case 6:
				if got, want := q.CloseStream(id), m.closeStream(id); got != want {
					t.Fatalf("op %d CloseStream(%s) = %v, model %v", i, id, got, want)
				}
			case 7:
				e := Error{Err: tooling.Error{Code: tooling.CodeUnavailable}}
				if got, want := q.EndStream(id, e), m.endStream(id, e); got != want {
					t.Fatalf("op %d EndStream(%s) = %v, model %v", i, id, got, want)
				}
			case 8:
				if got, want := q.Shutdown(), m.shutdown(); got != want {
					t.Fatalf("op %d Shutdown = %v, model %v", i, got, want)
				}
			case 9, 10:
				got, gok := q.TryRecv()
				want, wok := m.recv()
				if gok != wok || got != want {
					t.Fatalf("op %d TryRecv = %+v %v, model %+v %v", i, got, gok, want, wok)
				}
			}
			if got, want := q.Pending(), len(m.queue); got != want {
				t.Fatalf("op %d Pending = %d, model %d", i, got, want)
			}
			if got, want := q.Reserved(id), m.reserved[id]; got != want {
				t.Fatalf("op %d Reserved(%s) = %v, model %v", i, id, got, want)
			}
		}
	})
}

// model is the contract's inbox written as plainly as possible.
type model struct {
	capacity           int
	queue              []modelEntry
	reserved, streams  map[string]bool
	shut, shutReceived bool
}

type modelEntry struct {
	env    Envelope
	call   bool
	update bool // coalescing: a stream's update while the stream is open
}

func newModel(capacity int) *model {
	return &model{capacity: capacity, reserved: map[string]bool{}, streams: map[string]bool{}}
}

func (m *model) index(id string, pred func(modelEntry) bool) int {
	for i, e := range m.queue {
		if e.env.ID == id && pred(e) {
			return i
		}
	}
	return -1
}

func (m *model) inUse(id string) bool {
	return m.reserved[id] || m.streams[id] || m.index(id, func(e modelEntry) bool { return e.call || e.update }) >= 0
}

func (m *model) remove(i int) { m.queue = append(m.queue[:i], m.queue[i+1:]...) }

func (m *model) reserve(id string) error {
	switch {
	case m.shut:
		return ErrShutdown
	case len(m.reserved)+len(m.queue) >= m.capacity:
		return ErrFull
	case m.inUse(id):
		return ErrDuplicate
	}
	m.reserved[id] = true
	return nil
}

func (m *model) deliver(id string, ev Event) bool {
	if !m.reserved[id] {
		return false
	}
	delete(m.reserved, id)
	if m.shut {
		return false
	}
	m.queue = append(m.queue, modelEntry{env: Envelope{id, ev}, call: true})
	return true
}

func (m *model) cancel(id string) bool {
	if m.reserved[id] {
		delete(m.reserved, id)
		return true
	}
	if i := m.index(id, func(e modelEntry) bool { return e.call }); i >= 0 {
		m.remove(i)
		return true
	}
	return false
}

func (m *model) openStream(id string) error {
	switch {
	case m.shut:
		return ErrShutdown
	case m.inUse(id):
		return ErrDuplicate
	}
	m.streams[id] = true
	return nil
}

func (m *model) update(id string, ev Event) bool {
	if !m.streams[id] || m.shut {
		return false
	}
	if i := m.index(id, func(e modelEntry) bool { return e.update }); i >= 0 {
		m.queue[i].env.Event = ev
		return true
	}
	m.queue = append(m.queue, modelEntry{env: Envelope{id, ev}, update: true})
	return true
}

func (m *model) endStream(id string, ev Event) bool {
	if !m.streams[id] {
		return false
	}
	delete(m.streams, id)
	if i := m.index(id, func(e modelEntry) bool { return e.update }); i >= 0 {
		m.queue[i].update = false
	}
	if m.shut {
		return false
	}
	m.queue = append(m.queue, modelEntry{env: Envelope{id, ev}})
	return true
}

func (m *model) closeStream(id string) bool {
	if !m.streams[id] {
		return false
	}
	delete(m.streams, id)
	if i := m.index(id, func(e modelEntry) bool { return e.update }); i >= 0 {
		m.remove(i)
	}
	return true
}

func (m *model) shutdown() bool {
	if m.shut {
		return false
	}
	m.shut = true
	clear(m.reserved)
	clear(m.streams)
	m.queue = append(m.queue, modelEntry{env: Envelope{ShutdownID, Shutdown{}}})
	return true
}

func (m *model) recv() (Envelope, bool) {
	if m.shutReceived || len(m.queue) == 0 {
		return Envelope{}, false
	}
	e := m.queue[0]
	m.queue = m.queue[1:]
	if _, ok := e.env.Event.(Shutdown); ok {
		m.shutReceived = true
	}
	return e.env, true
}
