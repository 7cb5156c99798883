package daemon

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/thejerf/suture/v4"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/instances"
	"github.com/toolhostd/toolhostd/internal/policy"
	"github.com/toolhostd/toolhostd/internal/provider"
)

// Agent states, as control.AgentStatus reports them.
const (
	stateStarting = "starting" // loading the component, instantiating
	stateRunning  = "running"
	stateStopping = "stopping" // shutdown envelope sent, within the grace
	stateStopped  = "stopped"  // stopped by the daemon or an operator
	stateExited   = "exited"   // run returned ok and the policy does not restart it
	stateFailed   = "failed"   // failed and not restarted (policy never, or a load failure)
	stateBackoff  = "backoff"  // waiting to be restarted
	stateIdle     = "idle"     // start = "on-message": waiting for a message to start
)

// Restart policies ([agent.X] restart).
const (
	policyNever     = "never"
	policyOnFailure = "on-failure"
	policyAlways    = "always"
)

// Intensity limit of each agent's sub-supervisor: more than
// failureThreshold restarts within about failureDecay seconds pause the
// agent for its maximum restart backoff (on top of the backoff itself).
const (
	failureThreshold = 5
	failureDecay     = 30 // seconds
)

// maxOutputLog bounds the agent output written to the debug log.
const maxOutputLog = 1024

// agentRec is one configured agent: its config, its status and the
// sub-supervisor running its current service. Fields are guarded by
// Daemon.mu.
type agentRec struct {
	name string
	cfg  *config.Agent
	pol  *policy.Agent // the grants' policy, kept across runs; Reload may Update it

	limMu   sync.Mutex
	limited map[string]*provider.Limited // by provider: its grant's limits, kept across runs (providers.go)

	state    string
	since    time.Time
	restarts int
	traps    int
	lastErr  string
	inst     *host.Agent     // the running instance, if any
	changed  chan struct{}   // closed at the next state change (messages.go waits on it)
	pool     *instances.Pool // a per-session agent's instances while its service runs
	wake     chan struct{}   // an on-message agent's first message (buffered 1)
	content  string          // the component content it was last started with (host.Program.Content)

	sup     *suture.Supervisor
	svc     *agentService // the current service
	token   suture.ServiceToken
	hasSup  bool // token names a sub-supervisor in the root
	final   bool // the current service ended for good (exited, failed)
	gen     int  // bumped when a service is replaced: stale services write nothing
	started bool // some instance was started: the next start is a restart
	backoff time.Duration
	delay   time.Duration // wait before the next start
}

func newAgentRec(name string, cfg *config.Agent, rec policy.Recorder) *agentRec {
	return &agentRec{name: name, cfg: cfg, pol: policy.FromConfig(cfg, rec), state: stateStopped, since: time.Now(),
		backoff: cfg.RestartBackoff.Initial.Duration, changed: make(chan struct{}), wake: make(chan struct{}, 1)}
}

func (r *agentRec) setState(s string) {
	if r.state != s {
		r.state, r.since = s, time.Now()
		if r.changed != nil {
			close(r.changed)
		}
		r.changed = make(chan struct{})
	}
}

// stopTimeout is how long removing the agent's sub-supervisor may take.
func (r *agentRec) stopTimeout() time.Duration { return r.cfg.StopGrace.Duration + stopMargin }

// startLocked puts a new sub-supervisor with a new service for r into the
// root (d.mu held, d.root set). onStarted, if not nil, is called once when
// the first instance was started or could not be.
func (d *Daemon) startLocked(r *agentRec, onStarted func()) {
	r.gen++
	svc := &agentService{d: d, r: r, gen: r.gen, cfg: r.cfg, onStarted: onStarted}
	sup := suture.New("agent/"+r.name, suture.Spec{
		FailureThreshold: failureThreshold,
		FailureDecay:     failureDecay,
		FailureBackoff:   r.cfg.RestartBackoff.Max.Duration,
		Timeout:          r.stopTimeout(),
	})
	sup.Add(svc)
	r.sup, r.svc, r.final, r.hasSup = sup, svc, false, true
	r.setState(stateStarting)
	r.token = d.root.Add(sup)
}

// stopRec removes r's sub-supervisor, which stops its instance (shutdown
// envelope, grace, interrupt), and waits for it; then r is in state (an
// agent that had already exited or failed keeps that state). opMu held.
func (d *Daemon) stopRec(r *agentRec, state string) {
	d.mu.Lock()
	root := d.root
	if !r.hasSup || root == nil {
		d.mu.Unlock()
		return
	}
	tok, svc := r.token, r.svc
	r.hasSup = false
	if r.inst != nil {
		r.setState(stateStopping)
	}
	d.mu.Unlock()
	if err := root.RemoveAndWait(tok, r.stopTimeout()); err != nil {
		d.log.Error("agent did not stop in time", zap.String("agent", r.name), zap.Error(err))
	}
	svc.started() // stopped before it could start: nobody waits for it
	d.mu.Lock()
	r.gen++
	r.inst = nil
	if !r.final {
		r.setState(state)
	}
	d.mu.Unlock()
}

// agentService runs one agent under its sub-supervisor and implements its
// restart policy: each Serve waits out the pending backoff, loads the
// component, runs one instance and decides. It returns nil or an error for
// the supervisor to run it again, suture.ErrDoNotRestart when the policy
// (or a load failure) says the agent is done.
type agentService struct {
	d         *Daemon
	r         *agentRec
	gen       int
	cfg       *config.Agent
	onStarted func()
	once      sync.Once
}

func (s *agentService) String() string { return "agent/" + s.r.name }

// update runs f on the record unless this service was replaced.
func (s *agentService) update(f func(r *agentRec)) {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if s.r.gen == s.gen {
		f(s.r)
	}
}

func (s *agentService) started() {
	s.once.Do(func() {
		if s.onStarted != nil {
			s.onStarted()
		}
	})
}

func (s *agentService) log() *zap.Logger { return s.d.log.With(zap.String("agent", s.r.name)) }

func (s *agentService) Serve(ctx context.Context) error {
	defer s.started()
	if s.cfg.Instances == config.InstancesPerSession {
		return s.serveSessions(ctx)
	}
	for {
		if s.cfg.Start == config.StartOnMessage && !s.awaitMessage(ctx) {
			return ctx.Err()
		}
		idle, err := s.serveOnce(ctx)
		if !idle {
			return err
		}
	}
}

// serveOnce waits out the pending backoff, loads the component and runs
// one instance to its end; idle reports an on-message agent's instance
// stopped for being idle (to wait for the next message, not restarted).
func (s *agentService) serveOnce(ctx context.Context) (idle bool, err error) {
	var delay time.Duration
	s.update(func(r *agentRec) { delay, r.delay = r.delay, 0 })
	if delay > 0 {
		s.update(func(r *agentRec) { r.setState(stateBackoff) })
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			s.update(func(r *agentRec) { r.setState(stateStopped) })
			return false, ctx.Err()
		case <-t.C:
		}
	}
	s.update(func(r *agentRec) { r.setState(stateStarting) })
	// A stop while the component compiles ends the wait at once (the
	// compile goes on without us; see host.OpenContext).
	prog, err := s.d.host.OpenContext(ctx, s.cfg.Component)
	if err != nil && ctx.Err() != nil {
		s.update(func(r *agentRec) { r.setState(stateStopped) })
		s.log().Info("agent stopped while loading")
		return false, ctx.Err()
	}
	if err != nil {
		return false, s.cannotRun(err)
	}
	defer prog.Close()
	s.update(func(r *agentRec) { r.content = prog.Content() })
	env, err := s.cfg.ExpandedEnv()
	if err != nil {
		return false, s.cannotRun(err)
	}
	if ctx.Err() != nil {
		s.update(func(r *agentRec) { r.setState(stateStopped) })
		return false, ctx.Err()
	}
	inst := s.startInstance(prog, env) // cluster.go: nil while the host is halted
	if inst == nil {
		s.update(func(r *agentRec) { r.setState(stateStopped) })
		return false, fmt.Errorf("agent %s: the cluster host is fenced: %w", s.r.name, suture.ErrDoNotRestart)
	}
	start := time.Now()
	if m := s.d.metrics; m != nil {
		m.AgentInbox(s.r.name, inst.Inbox().Stats)
	}
	s.started()

	idleCh, stopIdle := s.idleWatch(inst)
	defer stopIdle()
	select {
	case <-inst.Done():
	case <-ctx.Done():
		s.update(func(r *agentRec) { r.setState(stateStopping) })
		inst.Stop()
		<-inst.Done()
	case <-idleCh:
		s.update(func(r *agentRec) { r.setState(stateStopping) })
		inst.Stop()
		<-inst.Done()
		s.update(func(r *agentRec) {
			r.inst = nil
			r.setState(stateIdle)
		})
		s.log().Info("idle agent stopped; the next message starts it", zap.Duration("idle_timeout", s.cfg.IdleTimeout.Duration))
		s.d.instanceStoppedIdle(s.r.name)
		return true, nil
	}
	out, runErr := inst.Wait()
	ran := time.Since(start)
	if ce := s.log().Check(zap.DebugLevel, "agent output"); ce != nil && runErr == nil {
		ce.Write(zap.String("output", truncate(out, maxOutputLog)))
	}
	if ctx.Err() != nil || s.d.isHalted() {
		s.update(func(r *agentRec) {
			r.inst = nil
			r.setState(stateStopped)
		})
		s.log().Info("agent stopped", zap.Duration("duration", ran), zap.NamedError("run_error", runErr))
		if ctx.Err() == nil { // halted: not restarted until the node starts it again
			return false, fmt.Errorf("agent %s: the cluster host is fenced: %w", s.r.name, suture.ErrDoNotRestart)
		}
		return false, ctx.Err()
	}
	return false, s.decide(runErr, ran)
}

// decide records the outcome of a run that ended by itself and applies the
// restart policy.
func (s *agentService) decide(runErr error, ran time.Duration) error {
	failed := runErr != nil
	trap := isTrap(runErr)
	restart := restarts(s.cfg.Restart, failed)
	var delay time.Duration
	s.update(func(r *agentRec) {
		r.inst = nil
		if trap {
			r.traps++
		}
		if failed {
			r.lastErr = control.CapError(runErr.Error())
		}
		switch {
		case restart:
			delay = r.nextDelay(ran)
			r.delay = delay
			r.setState(stateBackoff)
		case failed:
			r.final = true
			r.setState(stateFailed)
		default:
			r.final = true
			r.setState(stateExited)
		}
	})
	if m := s.d.metrics; m != nil && trap {
		m.AgentTrapped(s.r.name)
	}
	fields := []zap.Field{zap.Duration("duration", ran), zap.Bool("restart", restart)}
	if restart {
		fields = append(fields, zap.Duration("backoff", delay))
	}
	switch {
	case failed:
		s.log().Warn("agent run failed", append(fields, zap.Bool("trap", trap), zap.String("error", control.CapError(runErr.Error())))...)
	default:
		s.log().Info("agent run returned ok", fields...)
	}
	switch {
	case !restart:
		return fmt.Errorf("agent %s: %w", s.r.name, suture.ErrDoNotRestart)
	case failed: // logged above: the supervisor's event gets the first line
		return fmt.Errorf("agent %s: %s", s.r.name, headline(runErr))
	}
	return nil // suture restarts a service that returns, nil included
}

// cannotRun records a failure to even start the agent (its component does
// not load, its env cannot be expanded): failed, not retried until the
// config changes or an operator starts it.
func (s *agentService) cannotRun(err error) error {
	s.update(func(r *agentRec) {
		r.final = true
		r.lastErr = control.CapError(err.Error())
		r.setState(stateFailed)
	})
	s.log().Error("agent cannot run", zap.String("error", control.CapError(err.Error())))
	return fmt.Errorf("agent %s: %s (%w)", s.r.name, headline(err), suture.ErrDoNotRestart)
}

func (s *agentService) agentConfig(env map[string]string) host.AgentConfig {
	grants := make(map[string]bool, len(s.cfg.Toolings))
	for _, t := range s.cfg.Toolings {
		grants[t] = true
	}
	return host.AgentConfig{
		Name:          s.r.name,
		Grants:        func(t string) bool { return grants[t] },
		Providers:     s.providerAccess(),
		Policy:        s.r.pol,
		Env:           env,
		InboxCapacity: s.cfg.InboxCapacity,
		MemoryLimit:   uint64(s.cfg.Limits.Memory),
		Fuel:          s.cfg.Limits.Fuel,
		RunTimeout:    s.cfg.Limits.RunTimeout.Duration,
		StopGrace:     s.d.stopGrace(s.cfg.StopGrace.Duration),
		OnStarted:     s.recordInstantiate,
		LogRate:       s.cfg.Limits.LogRate,
		LogBurst:      s.cfg.Limits.LogBurst,
		OnLogDropped:  s.recordLogDropped,
		Messaging:     s.messaging(),
		OpenBucket:    s.openBucket(""),
	}
}

// recordLogDropped counts a guest log line dropped over the rate limit.
func (s *agentService) recordLogDropped() {
	if m := s.d.metrics; m != nil {
		m.AgentLogDropped(s.r.name)
	}
}

// recordInstantiate records the instantiation latency of each run.
func (s *agentService) recordInstantiate(d time.Duration) {
	if m := s.d.metrics; m != nil {
		m.AgentInstantiated(s.r.name, d)
	}
}

// nextDelay is the wait before restarting after a run that lasted ran:
// exponential from restart_backoff.initial to .max, back to initial after
// a run that lasted at least .max.
func (r *agentRec) nextDelay(ran time.Duration) time.Duration {
	initial, maxB := r.cfg.RestartBackoff.Initial.Duration, r.cfg.RestartBackoff.Max.Duration
	if ran >= maxB || r.backoff <= 0 {
		r.backoff = initial
	}
	d := r.backoff
	r.backoff = min(2*r.backoff, maxB)
	return d
}

// restarts reports whether policy restarts an agent whose run ended
// (failed: with an err, a trap or a host failure).
func restarts(policy string, failed bool) bool {
	switch policy {
	case policyAlways:
		return true
	case policyOnFailure:
		return failed
	}
	return false
}

// isTrap reports whether err is (or wraps) a guest trap.
func isTrap(err error) bool {
	return host.IsTrap(err)
}

// headline is the first line of err, cut to maxOutputLog bytes: enough to
// name a failure where it has been logged in full already.
func headline(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return truncate(s, maxOutputLog)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
