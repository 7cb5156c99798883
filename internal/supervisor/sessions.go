package supervisor

// An on-message agent waits for its first message and stops when idle; a
// per-session agent's service runs its instances.Pool, and in a cluster
// claims each session's key (Options.Sessions) before its instance
// starts and releases it once the instance ended. A fence halts these
// instances like the others.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/cluster"
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/instances"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/oplog"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// awaitMessage is an on-message agent waiting for its first message, whose
// trace context it returns: false when ctx ended first.
func (v *service) awaitMessage(ctx context.Context) (trace.SpanContext, bool) {
	v.set(Idle)
	v.started() // an agent waiting for messages is up
	select {
	case sc := <-v.r.run.wake:
		return sc, true
	case <-ctx.Done():
		v.set(Stopped)
		return trace.SpanContext{}, false
	}
}

// idleWatch is closed once an on-message agent's instance has had nothing
// to do for its idle_timeout (nil for other agents); stop ends the watch.
func (v *service) idleWatch(inst *host.Agent) (idle <-chan struct{}, stop func()) {
	if v.cfg.Start != config.StartOnMessage {
		return nil, func() {}
	}
	timeout := v.cfg.IdleTimeout.Duration
	ch, done, ended := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(min(max(timeout/4, 10*time.Millisecond), time.Second))
		defer t.Stop()
		lastBusy := time.Now()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			now := time.Now()
			if inst.Busy() {
				lastBusy = now
				continue
			}
			last := inst.Mailbox().LastActivity()
			if lastBusy.After(last) {
				last = lastBusy
			}
			if now.Sub(last) >= timeout {
				close(ch)
				return
			}
		}
	}()
	return ch, func() { close(done); <-ended }
}

// serveSessions runs a per-session agent: its program loaded, its
// instances made by a pool as messages come, until ctx ends.
func (v *service) serveSessions(ctx context.Context) error {
	v.set(Starting)
	prog, err := v.s.opts.Host.OpenContext(ctx, v.cfg.Component)
	if err != nil && ctx.Err() != nil {
		v.set(Stopped)
		return ctx.Err()
	}
	if err != nil {
		return v.cannotRun(err)
	}
	defer prog.Close()
	if !host.Receives(prog) {
		return v.cannotRun(fmt.Errorf(`instances = "per-session" needs a component that receives messages (built against toolhost:agent@0.3.0); %s is not`, v.cfg.Component))
	}
	env, err := v.cfg.ExpandedEnv()
	if err != nil {
		return v.cannotRun(err)
	}
	pool := instances.New(instances.Options{
		Agent: v.r.name, IdleTimeout: v.cfg.IdleTimeout.Duration, MaxInstances: v.cfg.MaxInstances, Log: v.s.log,
		Start: func(ctx context.Context, session, oneOff string) (instances.Instance, error) {
			return v.startSession(ctx, prog, env, session, oneOff)
		},
	})
	v.update(func(r *record) {
		r.st.content = prog.Content()
		r.run.pool = pool
		v.s.setState(r, Running)
	})
	v.started()
	var resume sync.WaitGroup
	rctx, stopResume := context.WithCancel(ctx) // in a cluster it looks on while the pool serves
	resume.Go(func() { v.resumeSessions(rctx, pool) })
	err = pool.Serve(ctx)
	stopResume()
	resume.Wait()
	v.update(func(r *record) {
		r.run.pool = nil
		v.s.setState(r, Stopped)
	})
	return err
}

// startSession starts one instance of a per-session agent: session's, or
// the one-off message oneOff's.
func (v *service) startSession(ctx context.Context, prog *host.Program, env map[string]string, session, oneOff string) (instances.Instance, error) {
	cfg := v.instanceConfig(env, session) // open("session"): this session's own bucket
	span := v.startSpan(trace.SpanContextFromContext(ctx), session)
	span.loaded(prog, 0)
	span.hook(&cfg)
	// The session first: in a cluster its oplog is written only by the
	// holder of its key.
	claimed, err := v.claimSession(session)
	if err != nil {
		span.fail(err)
		return nil, err
	}
	if err := v.openOplog(prog, v.oplogKey(session, oneOff), &cfg); err != nil {
		v.release(claimed, session)
		span.fail(err)
		return nil, message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable, "session %q of agent %q cannot start: %v", session, v.r.name, err)
	}
	inst, err := v.startSessionInstance(prog, cfg, session, claimed)
	if err != nil {
		v.endOplog(cfg.Durable.Oplog, err, false) // kept: it never ran
		span.fail(err)
		return nil, err
	}
	if m := v.s.opts.Metrics; m != nil {
		m.InstanceStarted(v.r.name)
	}
	go v.sessionEnded(inst, cfg.Durable.Oplog, session, span)
	if cfg.Durable.Oplog != nil {
		return durableSession{inst, v.s}, nil
	}
	return inst, nil
}

// durableSession is a durable per-session instance in its pool: stopped
// by the host's shutdown it is suspended, its messages left open in its
// oplog for the next start (host.Agent.Suspend); stopped otherwise (idle,
// evicted, a reload) it winds down as any instance does.
type durableSession struct {
	*host.Agent
	s *Supervisor
}

func (d durableSession) Stop() {
	if d.s.isStopping() {
		d.Suspend(true)
		return
	}
	d.Agent.Stop()
}

// claimSession claims session's key in a cluster (claimed: this call
// did); a session another host holds is a heldError.
func (v *service) claimSession(session string) (claimed bool, err error) {
	claims := v.s.opts.Sessions
	if claims == nil || session == "" {
		return false, nil
	}
	if err := claims.ClaimSession(context.Background(), v.r.name, session); err != nil {
		ref := message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable, "session %q of agent %q cannot start on host %s: %v",
			session, v.r.name, claims.Self(), err)
		if errors.Is(err, cluster.ErrSessionHeld) {
			return false, heldError{ref}
		}
		return false, ref
	}
	return true, nil
}

// release releases session's key if claimSession claimed it.
func (v *service) release(claimed bool, session string) {
	if claimed {
		v.s.opts.Sessions.ReleaseSession(v.r.name, session)
	}
}

// startSessionInstance starts session's instance (its key claimed
// already when claimed), unless the host is halted. The check, the start
// and the record Halt uses happen under the supervisor's lock.
func (v *service) startSessionInstance(prog *host.Program, cfg host.AgentConfig, session string, claimed bool) (*host.Agent, error) {
	s := v.s
	s.mu.Lock()
	if s.halted {
		s.mu.Unlock()
		v.release(claimed, session)
		return nil, message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable, "the cluster host is fenced")
	}
	inst := s.opts.Host.Start(prog, cfg, v.cfg.Input)
	s.sessions[inst] = true
	s.mu.Unlock()
	return inst, nil
}

// heldError is the refusal of a session another host holds: a local
// delivery routes it again, a forwarded one is answered 421.
type heldError struct{ err error }

func (e heldError) Error() string { return e.err.Error() }
func (e heldError) Unwrap() []error {
	return []error{e.err, cluster.ErrSessionHeld, control.ErrMisdirected}
}

// sessionEnded records how a per-session instance ended, forgets it and,
// in a cluster, releases its session's key.
func (v *service) sessionEnded(inst *host.Agent, l *oplog.Log, session string, span *startSpan) {
	_, err := inst.Wait()
	v.endOplog(l, err, false)
	span.fail(err) // an instance that ended before it started
	s := v.s
	s.mu.Lock()
	delete(s.sessions, inst)
	s.mu.Unlock()
	if s.opts.Sessions != nil && session != "" {
		s.opts.Sessions.ReleaseSession(v.r.name, session)
	}
	trap := host.IsTrap(err)
	if trap {
		s.mu.Lock()
		v.r.st.traps++
		s.mu.Unlock()
		v.log().Warn("instance trapped", zap.String("session", session), zap.String("error", headline(err)))
	}
	if m := s.opts.Metrics; m != nil {
		if trap {
			m.AgentTrapped(v.r.name)
		}
		m.InstanceEnded(v.r.name, false)
	}
}
