package supervisor

// Durable agents ([agent.X] durable = true): each instance has an oplog
// (package oplog) the host records its calls in (host.AgentConfig.Durable.Oplog).
// It is kept when the instance is cut off (a trap, an interrupt, a crash,
// a stop of its service: the next start replays it) and ends with the
// instance's run (it returned, or stopped idle), or with a replay that
// cannot go on (a changed component, a divergence, a corrupt entry).

import (
	"context"
	"errors"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/cluster"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/instances"
	"github.com/toolhostd/toolhostd/internal/oplog"
)

// OplogKey is the key of an instance's oplog: the agent's name, and a
// per-session instance's session after a '/'. A session that starts with
// '#' has it doubled: '#' and a message id name a one-off's (OneOffKey).
func OplogKey(agent, session string) string {
	if session == "" {
		return agent
	}
	if strings.HasPrefix(session, "#") {
		session = "#" + session
	}
	return agent + "/" + session
}

// OneOffKey is the oplog key of the instance of a per-session agent's
// one-off message id (a message with no session).
func OneOffKey(agent, id string) string { return agent + "/#" + id }

// InstanceOf is the instance of agent whose oplog is key: its session, or
// the id of its one-off message; ok is false for a key of another agent
// or of a single instance.
func InstanceOf(agent, key string) (session, oneOff string, ok bool) {
	rest, ok := strings.CutPrefix(key, agent+"/")
	switch {
	case !ok || rest == "":
		return "", "", false
	case strings.HasPrefix(rest, "##"):
		return rest[1:], "", true
	case strings.HasPrefix(rest, "#"):
		return "", rest[1:], true
	}
	return rest, "", true
}

// oplogKey is the oplog key of a per-session agent's instance, session's
// or the one-off message oneOff's; "" for a one-off in a cluster, which
// is not durable (it runs where it arrives, and nothing claims it for the
// host that would resume it).
func (v *service) oplogKey(session, oneOff string) string {
	if oneOff == "" {
		return OplogKey(v.r.name, session)
	}
	if v.s.opts.Sessions != nil {
		return ""
	}
	return OneOffKey(v.r.name, oneOff)
}

// openOplog gives cfg the oplog key of an instance of a durable agent
// (nothing for one that is not, nor for key ""): the one its last
// instance left, to replay, or a new one under prog's content.
func (v *service) openOplog(prog *host.Program, key string, cfg *host.AgentConfig) error {
	if !v.cfg.Durable || v.s.opts.Oplog == nil || key == "" {
		return nil
	}
	st, err := v.s.opts.Oplog()
	if err != nil {
		return err
	}
	l, err := st.Open(key, oplog.Header{Component: prog.Content(), Started: time.Now()})
	if err != nil {
		return err
	}
	cfg.Durable.Oplog = l
	cfg.Durable.MaxEntries, cfg.Durable.MaxBytes = v.cfg.MaxOplog.Entries, int64(v.cfg.MaxOplog.Bytes)
	if m := v.s.opts.Metrics; m != nil {
		name := v.r.name
		cfg.Durable.OnReplayed = func(entries int, _ time.Duration) { m.AgentReplayed(name, entries) }
	}
	if n := len(l.Recorded()); n > 0 {
		_, bytes := l.Len()
		v.log().Info("resuming from its oplog", zap.String("oplog", key), zap.Int("entries", n), zap.Int64("bytes", bytes))
	}
	return nil
}

// endOplog keeps or deletes an instance's oplog by how it ended: kept
// when it was cut off (runErr is a trap, an interrupt, a suspension or a
// host failure), deleted when its run returned, it stopped idle, or its
// replay cannot go on (a changed component, a divergence, a corrupt
// entry: the restart policy's next start is a fresh run).
func (v *service) endOplog(l *oplog.Log, runErr error, idle bool) {
	if l == nil {
		return
	}
	if m := v.s.opts.Metrics; m != nil && errors.Is(runErr, host.ErrDiverged) {
		m.AgentDiverged(v.r.name)
	}
	if !idle && host.KeepsOplog(runErr) {
		if err := l.Close(); err != nil {
			v.log().Warn("oplog close", zap.String("oplog", l.Key()), zap.Error(err))
		}
		n, bytes := l.Len()
		v.log().Info("oplog kept: the next start replays it", zap.String("oplog", l.Key()), zap.Int("entries", n), zap.Int64("bytes", bytes))
		return
	}
	if err := l.Delete(); err != nil {
		v.log().Warn("oplog delete", zap.String("oplog", l.Key()), zap.Error(err))
	}
}

// dropOplogs removes the oplogs of an agent a reload removed: no start
// will replay them.
func (s *Supervisor) dropOplogs(name string) {
	if s.opts.Oplog == nil {
		return
	}
	st, err := s.opts.Oplog()
	if err != nil {
		return
	}
	keys, err := st.Keys()
	if err != nil {
		return
	}
	for _, k := range keys {
		if _, _, ok := InstanceOf(name, k); ok || k == name {
			err := st.Remove(k)
			switch {
			case errors.Is(err, oplog.ErrFenced): // in a cluster: its holder removes it
				s.log.Debug("oplog of a removed agent left to the host that holds it", zap.String("oplog", k))
			case err != nil:
				s.log.Warn("oplog of a removed agent not removed", zap.String("oplog", k), zap.Error(err))
			}
		}
	}
}

// resumeSessions starts again, in pool, the instances of a durable
// per-session agent that its host left with an oplog (killed, or
// suspended by a stop): each resumes its session's work and the messages
// it had open without waiting for the session's next message. In a
// cluster the oplogs are shared: it resumes those of the sessions nobody
// holds that are placed here, now and whenever a member leaves (its
// sessions' keys went with its lease), and again every resumeEvery while
// some such session is placed elsewhere or nowhere yet (a member still
// settling), for a minute at most.
func (v *service) resumeSessions(ctx context.Context, pool *instances.Pool) {
	if !v.cfg.Durable || v.s.opts.Oplog == nil {
		return
	}
	cl := v.s.opts.Sessions
	looks := 0 // passes since the last departure
	for {
		seen := uint64(0)
		if cl != nil {
			seen = cl.Departed()
		}
		waiting := v.resumePass(ctx, pool)
		if cl == nil {
			return
		}
		looks++
		if !v.awaitOrphans(ctx, cl, seen, waiting && looks < resumeLooks) {
			return
		}
		if cl.Departed() != seen {
			looks = 0
		}
	}
}

// awaitOrphans waits for a member to leave after seen departures (or,
// waiting, resumeEvery); false once ctx ended.
func (v *service) awaitOrphans(ctx context.Context, cl Sessions, seen uint64, waiting bool) bool {
	var again <-chan time.Time
	if waiting {
		t := time.NewTimer(resumeEvery)
		defer t.Stop()
		again = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return false
		case <-again:
			return true
		case <-cl.Changed():
			if cl.Departed() != seen {
				return true
			}
		}
	}
}

// resumeEvery is how often a cluster host looks again for the durable
// sessions nobody holds while one is not placed here, at most resumeLooks
// times after a departure (each look reads the oplogs' keys): the host
// placement gives such a session resumes it, once settled, within them.
const (
	resumeEvery = 2 * time.Second
	resumeLooks = 30
)

// resumePass wakes the sessions of the agent that have an oplog (and, in
// a cluster, nobody holds and are placed here); waiting reports, in a
// cluster, a session nobody holds that is not placed here.
func (v *service) resumePass(ctx context.Context, pool *instances.Pool) (waiting bool) {
	st, err := v.s.opts.Oplog()
	if err != nil {
		v.log().Warn("durable sessions not resumed", zap.Error(err))
		return false
	}
	keys, err := st.Keys()
	if err != nil {
		v.log().Warn("durable sessions not resumed", zap.Error(err))
		return true
	}
	cl := v.s.opts.Sessions
	for _, k := range keys {
		session, oneOff, ok := InstanceOf(v.r.name, k)
		if !ok || ctx.Err() != nil {
			continue
		}
		if oneOff != "" {
			if cl == nil { // in a cluster one-offs are not durable
				v.wake(pool.WakeOneOff(ctx, oneOff), k)
			}
			continue
		}
		if cl != nil {
			if _, held := cl.SessionOwner(v.r.name, session); held {
				continue // its holder runs it (this host included)
			}
			if cl.PlaceSession(v.r.name, session) != cl.Self() {
				waiting = true
				continue
			}
		}
		v.wake(pool.Wake(ctx, session), k)
	}
	return waiting
}

// wake logs the outcome err of waking the instance of the oplog key.
func (v *service) wake(err error, key string) {
	switch {
	case errors.Is(err, cluster.ErrSessionHeld):
		v.log().Debug("a durable session was taken by another host", zap.String("oplog", key))
	case err != nil:
		v.log().Warn("a durable instance cannot resume", zap.String("oplog", key), zap.Error(err))
	}
}
