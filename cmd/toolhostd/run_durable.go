package main

// A durable agent's run ([agent.X] durable = true, run with its config,
// whose [host] state_dir keeps the oplog): the run records its host calls
// in the state directory's oplog.db, as serve does, so that a run killed
// mid-way (kill -9, an OOM) is resumed by running the same command again:
// what it had done is replayed from the oplog, not made again. The oplog
// ends with the run (it returned, or was stopped by SIGINT or SIGTERM,
// which gives the agent its shutdown).

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/oplog"
	"github.com/toolhostd/toolhostd/internal/system"
)

// runOplogKey is the oplog key of a run of agent with input: apart from
// serve's (an agent's name has no ':'), and one per input, so that a run
// with another input starts afresh rather than replaying this one.
func runOplogKey(agent, input string) string {
	sum := sha256.Sum256([]byte(input))
	return "run:" + agent + ":" + hex.EncodeToString(sum[:8])
}

// runInput is what names a run among those of its agent (runOplogKey):
// its input, and for --chat its session too (a chat is apart from a run
// of the same input).
func runInput(chat bool, session, input string) string {
	if !chat {
		return input
	}
	return "chat\x00" + session + "\x00" + input
}

// openRunOplog gives acfg the oplog of this run of the configured agent
// ac when it is durable and the config keeps a state directory (nil
// otherwise): the one a killed run of it with this input left, to replay,
// or a new one.
func openRunOplog(cfg *config.Config, ac *config.Agent, sys *system.System, prog *host.Program, input string, acfg *host.AgentConfig, log *zap.Logger) (*oplog.Log, error) {
	if ac == nil || !ac.Durable || runStoreTemporary(cfg) {
		return nil, nil
	}
	st, err := sys.Oplog()
	if err != nil {
		return nil, err
	}
	l, err := st.Open(runOplogKey(ac.Name, input), oplog.Header{Component: prog.Content(), Started: time.Now()})
	if err != nil {
		return nil, err
	}
	acfg.Durable.Oplog = l
	acfg.Durable.MaxEntries, acfg.Durable.MaxBytes = ac.MaxOplog.Entries, int64(ac.MaxOplog.Bytes)
	if n := len(l.Recorded()); n > 0 {
		_, bytes := l.Len()
		log.Info("resuming from its oplog", zap.String("agent", ac.Name), zap.String("oplog", l.Key()), zap.Int("entries", n), zap.Int64("bytes", bytes))
	}
	return l, nil
}

// endRunOplog keeps the run's oplog when the run was cut off (for the
// next run to resume) and deletes it when the run ended.
func endRunOplog(l *oplog.Log, runErr error, log *zap.Logger) {
	if l == nil {
		return
	}
	if host.KeepsOplog(runErr) {
		if err := l.Close(); err != nil {
			log.Warn("oplog close", zap.String("oplog", l.Key()), zap.Error(err))
		}
		return
	}
	if err := l.Delete(); err != nil {
		log.Warn("oplog delete", zap.String("oplog", l.Key()), zap.Error(err))
	}
}
