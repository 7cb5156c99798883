package supervisor

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/thejerf/suture/v4"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/provider"
)

// Restart policies ([agent.X] restart).
const (
	policyNever     = "never"
	policyOnFailure = "on-failure"
	policyAlways    = "always"
)

// maxOutputLog bounds the agent output written to the debug log.
const maxOutputLog = 1024

// service runs one agent under its sub-supervisor and implements its
// restart policy: each Serve waits out the pending backoff, loads the
// component, runs one instance and decides. It returns nil or an error for
// the supervisor to run it again, suture.ErrDoNotRestart when the policy
// (or a load failure) says the agent is done.
type service struct {
	s         *Supervisor
	r         *record
	gen       int
	cfg       *config.Agent
	onStarted func()
	once      sync.Once
}

func (v *service) String() string { return "agent/" + v.r.name }

// update runs f on the record unless this service was replaced.
func (v *service) update(f func(r *record)) {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	if v.r.slot.gen == v.gen {
		f(v.r)
	}
}

// set moves the record to st unless this service was replaced.
func (v *service) set(st State) { v.update(func(r *record) { v.s.setState(r, st) }) }

func (v *service) started() {
	v.once.Do(func() {
		if v.onStarted != nil {
			v.onStarted()
		}
	})
}

func (v *service) log() *zap.Logger { return v.s.log.With(zap.String("agent", v.r.name)) }

// instanceConfig is the host.AgentConfig of an instance of the agent.
func (v *service) instanceConfig(env map[string]string, session string) host.AgentConfig {
	r := v.r
	return v.s.opts.Config(Instance{Agent: r.name, Config: v.cfg, Session: session, Env: env, Policy: r.pol,
		Limit: func(name string, p provider.Provider, g *config.ProviderGrant) (provider.Provider, error) {
			return r.limit(name, p, g, v.s.opts.Limit)
		}})
}

func (v *service) Serve(ctx context.Context) error {
	defer v.started()
	if v.cfg.Instances == config.InstancesPerSession {
		return v.serveSessions(ctx)
	}
	for {
		var cause trace.SpanContext // the message that woke an on-message agent
		if v.cfg.Start == config.StartOnMessage {
			sc, ok := v.awaitMessage(ctx)
			if !ok {
				return ctx.Err()
			}
			cause = sc
		}
		idle, err := v.serveOnce(ctx, cause)
		if !idle {
			return err
		}
	}
}

// serveOnce waits out the pending backoff, loads the component and runs
// one instance to its end; idle reports an on-message agent's instance
// stopped for being idle (to wait for the next message, not restarted).
// An instance started for a message (cause) is a span of it.
func (v *service) serveOnce(ctx context.Context, cause trace.SpanContext) (idle bool, err error) {
	var delay time.Duration
	v.update(func(r *record) { delay, r.slot.delay = r.slot.delay, 0 })
	if delay > 0 {
		v.set(Backoff)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			v.set(Stopped)
			return false, ctx.Err()
		case <-t.C:
		}
	}
	v.set(Starting)
	span := v.startSpan(cause, "")
	// A stop while the component compiles ends the wait at once (the
	// compile goes on without us; see host.OpenContext).
	loading := time.Now()
	prog, err := v.s.opts.Host.OpenContext(ctx, v.cfg.Component)
	if err != nil && ctx.Err() != nil {
		span.fail(ctx.Err())
		v.set(Stopped)
		v.log().Info("agent stopped while loading")
		return false, ctx.Err()
	}
	if err != nil {
		span.fail(err)
		return false, v.cannotRun(err)
	}
	span.loaded(prog, time.Since(loading))
	defer prog.Close()
	v.update(func(r *record) { r.st.content = prog.Content() })
	env, err := v.cfg.ExpandedEnv()
	if err != nil {
		span.fail(err)
		return false, v.cannotRun(err)
	}
	if ctx.Err() != nil {
		span.fail(ctx.Err())
		v.set(Stopped)
		return false, ctx.Err()
	}
	cfg := v.instanceConfig(env, "")
	if err := v.openOplog(prog, v.r.name, &cfg); err != nil {
		span.fail(err)
		return false, v.cannotRun(err)
	}
	inst := v.startInstance(prog, cfg, span)
	if inst == nil {
		err := fmt.Errorf("agent %s: the cluster host is fenced: %w", v.r.name, suture.ErrDoNotRestart)
		v.endOplog(cfg.Durable.Oplog, err, false) // kept: it never ran
		span.fail(err)
		v.set(Stopped)
		return false, err
	}
	start := time.Now()
	if m := v.s.opts.Metrics; m != nil {
		m.AgentInbox(v.r.name, inst.Inbox().Stats)
	}
	v.started()

	idleCh, stopIdle := v.idleWatch(inst)
	defer stopIdle()
	select {
	case <-inst.Done():
	case <-ctx.Done():
		v.set(Stopping)
		if cfg.Durable.Oplog != nil {
			inst.Suspend(v.s.handingOver(v.r)) // a durable instance's work resumes from its oplog
		} else {
			inst.Stop()
		}
		<-inst.Done()
	case <-idleCh:
		v.set(Stopping)
		inst.Stop()
		<-inst.Done()
		v.endOplog(cfg.Durable.Oplog, nil, true)
		v.update(func(r *record) {
			r.run.inst = nil
			v.s.setState(r, Idle)
		})
		v.log().Info("idle agent stopped; the next message starts it", zap.Duration("idle_timeout", v.cfg.IdleTimeout.Duration))
		if m := v.s.opts.Metrics; m != nil {
			m.InstanceEnded(v.r.name, true)
		}
		return true, nil
	}
	out, runErr := inst.Wait()
	v.endOplog(cfg.Durable.Oplog, runErr, false)
	span.fail(runErr) // an instance that ended before it started
	ran := time.Since(start)
	if ce := v.log().Check(zap.DebugLevel, "agent output"); ce != nil && runErr == nil {
		ce.Write(zap.String("output", truncate(out, maxOutputLog)))
	}
	if ctx.Err() != nil || v.s.isHalted() {
		v.update(func(r *record) {
			r.run.inst = nil
			v.s.setState(r, Stopped)
		})
		v.log().Info("agent stopped", zap.Duration("duration", ran), zap.NamedError("run_error", runErr))
		if ctx.Err() == nil { // halted: not restarted until the node starts it again
			return false, fmt.Errorf("agent %s: the cluster host is fenced: %w", v.r.name, suture.ErrDoNotRestart)
		}
		return false, ctx.Err()
	}
	return false, v.decide(runErr, ran)
}

// startInstance starts an instance of the service's agent unless the host
// is halted (nil then). The check, the start and the record happen under
// the supervisor's lock, so Halt sees every instance that started before
// it.
func (v *service) startInstance(prog *host.Program, cfg host.AgentConfig, span *startSpan) *host.Agent {
	span.hook(&cfg)
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.halted {
		return nil
	}
	inst := s.opts.Host.Start(prog, cfg, v.cfg.Input)
	if r := v.r; r.slot.gen == v.gen {
		if r.slot.started {
			r.st.restarts++
		}
		r.slot.started = true
		r.run.inst = inst
		s.setState(r, Running)
	}
	return inst
}

// decide records the outcome of a run that ended by itself and applies the
// restart policy.
func (v *service) decide(runErr error, ran time.Duration) error {
	failed := runErr != nil
	trap := host.IsTrap(runErr)
	restart := restarts(v.cfg.Restart, failed)
	var delay time.Duration
	v.update(func(r *record) {
		r.run.inst = nil
		if trap {
			r.st.traps++
		}
		if failed {
			r.st.lastErr = control.CapError(runErr.Error())
		}
		switch {
		case restart:
			delay = r.nextDelay(ran)
			r.slot.delay = delay
			v.s.setState(r, Backoff)
		case failed:
			r.slot.final = true
			v.s.setState(r, Failed)
		default:
			r.slot.final = true
			v.s.setState(r, Exited)
		}
	})
	if m := v.s.opts.Metrics; m != nil && trap {
		m.AgentTrapped(v.r.name)
	}
	fields := []zap.Field{zap.Duration("duration", ran), zap.Bool("restart", restart)}
	if restart {
		fields = append(fields, zap.Duration("backoff", delay))
	}
	switch {
	case failed:
		v.log().Warn("agent run failed", append(fields, zap.Bool("trap", trap), zap.String("error", control.CapError(runErr.Error())))...)
	default:
		v.log().Info("agent run returned ok", fields...)
	}
	switch {
	case !restart:
		return fmt.Errorf("agent %s: %w", v.r.name, suture.ErrDoNotRestart)
	case failed: // logged above: the supervisor's event gets the first line
		return fmt.Errorf("agent %s: %s", v.r.name, headline(runErr))
	}
	return nil // suture restarts a service that returns, nil included
}

// cannotRun records a failure to even start the agent (its component does
// not load, its env cannot be expanded): failed, not retried until the
// config changes or an operator starts it.
func (v *service) cannotRun(err error) error {
	v.update(func(r *record) {
		r.slot.final = true
		r.st.lastErr = control.CapError(err.Error())
		v.s.setState(r, Failed)
	})
	v.log().Error("agent cannot run", zap.String("error", control.CapError(err.Error())))
	return fmt.Errorf("agent %s: %s (%w)", v.r.name, headline(err), suture.ErrDoNotRestart)
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
