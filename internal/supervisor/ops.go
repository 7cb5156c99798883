package supervisor

import (
	"sync"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/policy"
)

// Check reports whether an operation on name can be done now:
// ErrNotServing, ErrStopping or control.ErrUnknownAgent when not.
func (s *Supervisor) Check(name string) error {
	_, err := s.lookupOp(name)
	return err
}

// Serving reports ErrNotServing before Run and after Detach, ErrStopping
// once Shutdown began; nil otherwise.
func (s *Supervisor) Serving() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.servingLocked()
}

func (s *Supervisor) servingLocked() error {
	switch {
	case s.stopping:
		return ErrStopping
	case s.root == nil:
		return ErrNotServing
	}
	return nil
}

func (s *Supervisor) lookupOp(name string) (*record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.servingLocked(); err != nil {
		return nil, err
	}
	r := s.agents[name]
	if r == nil {
		return nil, control.ErrUnknownAgent
	}
	return r, nil
}

// Start starts a stopped, exited or failed agent afresh (backoff reset);
// an agent that runs or waits to be restarted is left alone (started
// false). why is logged.
func (s *Supervisor) Start(name, why string) (started bool, err error) {
	r, err := s.lookupOp(name)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	if r.slot.hasSup && !r.slot.final {
		s.mu.Unlock()
		return false, nil
	}
	s.mu.Unlock()
	s.stopRec(r, Stopped) // an exited or failed agent's empty supervisor
	s.mu.Lock()
	defer s.mu.Unlock()
	r.resetBackoff()
	s.startLocked(r, nil)
	s.log.Info(why, zap.String("agent", name))
	return true, nil
}

// Stop stops the agent (shutdown envelope, stop grace, interrupt) and
// waits for it; it stays stopped until started again or the config
// changes.
func (s *Supervisor) Stop(name string) error {
	r, err := s.lookupOp(name)
	if err != nil {
		return err
	}
	s.stopRec(r, Stopped)
	s.mu.Lock()
	r.slot.final = false
	s.setState(r, Stopped)
	s.mu.Unlock()
	s.log.Info("agent stopped by request", zap.String("agent", name))
	return nil
}

// Restart stops the agent as Stop does and starts it again at once; the
// restart counts in its restarts.
func (s *Supervisor) Restart(name string) error {
	r, err := s.lookupOp(name)
	if err != nil {
		return err
	}
	// A durable single instance is suspended with its messages left open:
	// the next instance resumes them from its oplog and answers them.
	s.mu.Lock()
	r.slot.handOver = r.cfg.Durable && r.cfg.Instances != config.InstancesPerSession
	s.mu.Unlock()
	s.stopRec(r, Stopped)
	s.mu.Lock()
	defer s.mu.Unlock()
	r.slot.handOver = false
	r.resetBackoff()
	s.startLocked(r, nil)
	s.log.Info("agent restarted by request", zap.String("agent", name))
	return nil
}

// Release stops the agent as a reload or a hand-over does: its state is
// stopped, unless it had exited or failed.
func (s *Supervisor) Release(name string) {
	s.mu.Lock()
	r := s.agents[name]
	s.mu.Unlock()
	if r != nil {
		s.stopRec(r, Stopped)
	}
}

// StopAgents stops the named agents, all at once, and waits for them.
// Those handOver reports true for (a reload restarts them, durable as
// before) are suspended with the messages open to them left open: their
// next instance resumes them from its oplog and answers them.
func (s *Supervisor) StopAgents(names []string, handOver func(name string) bool) {
	s.mu.Lock()
	var recs []*record
	for _, name := range names {
		if r := s.agents[name]; r != nil {
			if handOver != nil && r.cfg.Durable && handOver(name) {
				r.slot.handOver = true
			}
			recs = append(recs, r)
		}
	}
	s.mu.Unlock()
	s.stopAll(recs)
}

// handingOver reports whether r's instance is stopped to be handed over
// (StopAgents) or the host shuts down: a durable instance then leaves its
// messages open for the next.
func (s *Supervisor) handingOver(r *record) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping || r.slot.handOver
}

// Shutdown refuses every operation from now on and stops every agent at
// once (each bounded by its stop grace), waiting for them.
func (s *Supervisor) Shutdown() {
	s.mu.Lock()
	s.stopping = true
	recs := make([]*record, 0, len(s.agents))
	for _, r := range s.agents {
		recs = append(recs, r)
	}
	s.mu.Unlock()
	s.stopAll(recs)
}

func (s *Supervisor) stopAll(recs []*record) {
	var wg sync.WaitGroup
	for _, r := range recs {
		wg.Go(func() { s.stopRec(r, Stopped) })
	}
	wg.Wait()
}

// Detach forgets the root once it has stopped: operations answer
// ErrNotServing.
func (s *Supervisor) Detach() {
	s.mu.Lock()
	s.root = nil
	s.mu.Unlock()
}

// Replace forgets the removed agents and makes the added and changed ones
// (stopped by StopAgents before) new records from agents, starting those
// here reports true for.
func (s *Supervisor) Replace(agents map[string]*config.Agent, removed, fresh []string, here func(name string, a *config.Agent) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range removed {
		if r := s.agents[name]; r != nil && r.cfg.Durable {
			s.dropOplogs(name)
		}
		delete(s.agents, name)
	}
	for _, name := range fresh {
		r := newRecord(name, agents[name], s.opts.Recorder)
		s.agents[name] = r
		if s.root != nil && here(name, r.cfg) {
			s.startLocked(r, nil)
		}
	}
}

// ApplyPolicies gives each named agent its new grants while it runs and
// takes its new config entry as its own.
func (s *Supervisor) ApplyPolicies(agents map[string]*config.Agent, names []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range names {
		r := s.agents[name]
		r.pol.Update(policy.RulesOf(agents[name]))
		// The running service keeps its copy: it reads no grant from it.
		r.cfg = agents[name]
	}
}

// Contents are the component contents the agents were last started with,
// by agent ("" for one never started).
func (s *Supervisor) Contents() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.agents))
	for name, r := range s.agents {
		out[name] = r.st.content
	}
	return out
}

// Halt stops every running instance at once and waits: a fence's fast
// path, which needs no operation to be over. Until Resume no instance
// starts.
func (s *Supervisor) Halt() {
	s.mu.Lock()
	s.halted = true
	var insts []*host.Agent
	for _, r := range s.agents {
		if r.run.inst != nil {
			insts = append(insts, r.run.inst)
			s.setState(r, Stopping)
		}
	}
	for inst := range s.sessions {
		insts = append(insts, inst)
	}
	s.mu.Unlock()
	for _, inst := range insts {
		inst.Stop()
	}
	for _, inst := range insts {
		<-inst.Done()
	}
}

// Resume lets instances start again.
func (s *Supervisor) Resume() {
	s.mu.Lock()
	s.halted = false
	s.mu.Unlock()
}

// isStopping reports whether the host shuts down (Shutdown was called).
func (s *Supervisor) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

func (s *Supervisor) isHalted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.halted
}
