package daemon

// The durable agents' oplogs as the control API shows them: one log
// (GET /v1/agents/{name}/oplog, control.OplogBackend), what each durable
// agent's hold in its status (ps), and the store's counters (metrics).

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/oplog"
	hoststatus "github.com/toolhostd/toolhostd/internal/status"
	"github.com/toolhostd/toolhostd/internal/supervisor"
)

var _ control.OplogBackend = (*Daemon)(nil)

// runningConfig is the config the daemon runs now.
func (d *Daemon) runningConfig() *config.Config {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg
}

// oplogStore is the oplog store to read: the one the durable agents
// opened, else, when the config has a durable agent and the file exists,
// the store opened now (it may hold the logs instances cut off left for
// their next start; their first instance would open it anyway); nil when
// no agent is durable or, on one host, there is no file: reading creates
// none. In a cluster the store is etcd's, which opening creates nothing in.
func (d *Daemon) oplogStore(cfg *config.Config) (*oplog.Store, error) {
	if st := d.g.OpenedOplog(); st != nil {
		return st, nil
	}
	if !cfg.Durable() {
		return nil, nil
	}
	if cfg.Cluster == nil {
		if _, err := os.Stat(cfg.OplogPath()); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	st, err := d.g.Oplog()
	if errors.Is(err, oplog.ErrClosed) {
		return nil, fmt.Errorf("%w: the daemon is shutting down", control.ErrUnavailable)
	}
	return st, err
}

// Oplog is the oplog of the agent's instance, or of its session's
// instance for a per-session agent, each entry's data only with content.
func (d *Daemon) Oplog(agent, session string, content bool) (control.Oplog, error) {
	cfg := d.runningConfig()
	a := cfg.Agent[agent]
	if a == nil {
		return control.Oplog{}, fmt.Errorf("%w: %q", control.ErrUnknownAgent, agent)
	}
	key := supervisor.OplogKey(agent, session)
	perSession := a.Instances == config.InstancesPerSession
	if session != "" && !perSession {
		return control.Oplog{}, fmt.Errorf("%w of %q: %q is not a per-session agent (its oplog is %q's)", control.ErrNoOplog, key, agent, agent)
	}
	st, err := d.oplogStore(cfg)
	if err != nil {
		return control.Oplog{}, err
	}
	if st == nil && !cfg.Durable() {
		return control.Oplog{}, fmt.Errorf("%w of %q: no agent is durable here", control.ErrNoOplog, key)
	}
	if session == "" && perSession {
		return control.Oplog{}, sessionsWithOplog(st, agent)
	}
	h, entries, err := readLog(st, key)
	if id, ok := strings.CutPrefix(session, "#"); ok && errors.Is(err, oplog.ErrNotFound) {
		// AGENT/#ID: no session of that name, the one-off message ID's.
		key = supervisor.OneOffKey(agent, id)
		h, entries, err = readLog(st, key)
	}
	switch {
	case errors.Is(err, oplog.ErrNotFound) && !a.Durable:
		return control.Oplog{}, fmt.Errorf("%w of %q: the agent is not durable", control.ErrNoOplog, key)
	case errors.Is(err, oplog.ErrNotFound):
		return control.Oplog{}, fmt.Errorf("%w of %q: no instance of it runs or was cut off (a run that ended ends its oplog)", control.ErrNoOplog, key)
	case errors.Is(err, oplog.ErrClosed):
		return control.Oplog{}, fmt.Errorf("%w: the daemon is shutting down", control.ErrUnavailable)
	case err != nil:
		return control.Oplog{}, err
	}
	out := control.Oplog{Key: key, Component: h.Component, Started: h.Started, Entries: make([]control.OplogEntry, len(entries))}
	for i, e := range entries {
		oe := control.OplogEntry{Seq: e.Seq, Kind: e.Kind.String(), Call: e.Call, Bytes: len(e.Data), At: e.At}
		if content {
			oe.Data = e.Data
		}
		out.Entries[i] = oe
	}
	return out, nil
}

// readLog is the log key of st (nil: no file, no log).
func readLog(st *oplog.Store, key string) (oplog.Header, []oplog.Entry, error) {
	if st == nil {
		return oplog.Header{}, nil, oplog.ErrNotFound
	}
	return st.Entries(key)
}

// sessionsWithOplog is the error of a per-session agent's oplog asked for
// without a session: it names the sessions of st (nil: none) that have
// one.
func sessionsWithOplog(st *oplog.Store, agent string) error {
	var keys []string
	if st != nil {
		var err error
		if keys, err = st.Keys(); err != nil {
			return err
		}
	}
	var sessions []string
	for _, k := range keys {
		switch s, oneOff, ok := supervisor.InstanceOf(agent, k); {
		case !ok:
		case oneOff != "":
			sessions = append(sessions, "#"+oneOff+" (a one-off message's)")
		default:
			sessions = append(sessions, s)
		}
	}
	have := "none has one"
	if len(sessions) > 0 {
		have = "those with one: " + strings.Join(sessions, ", ")
	}
	return fmt.Errorf("%w of %q: it is a per-session agent, each session's instance has its own: name one (%s/SESSION); %s",
		control.ErrNoOplog, agent, agent, have)
}

// withOplogs sets, in the status of each durable agent of list, what its
// oplogs hold: one read of the store's summaries (nothing without a
// file). When the store cannot be read the statuses are left without.
func (d *Daemon) withOplogs(list []control.AgentStatus) []control.AgentStatus {
	cfg := d.runningConfig()
	durable := false
	for _, a := range list {
		if c := cfg.Agent[a.Name]; c != nil && c.Durable {
			durable = true
			break
		}
	}
	if !durable {
		return list
	}
	st, err := d.oplogStore(cfg)
	if err != nil {
		d.log.Debug("agents' oplogs not read", zap.Error(err))
		return list
	}
	var sums []oplog.Summary // none without a file
	if st != nil {
		if sums, err = st.Summaries(); err != nil {
			d.log.Warn("agents' oplogs not read", zap.Error(err))
			return list
		}
	}
	single := map[string]hoststatus.Oplog{}   // by key: a single agent's
	sessions := map[string]hoststatus.Oplog{} // by agent: over its sessions
	for _, s := range sums {
		if agent, _, ok := strings.Cut(s.Key, "/"); ok {
			o := sessions[agent]
			o.Entries, o.Bytes, o.Logs = o.Entries+s.Entries, o.Bytes+s.Bytes, o.Logs+1
			sessions[agent] = o
		} else {
			single[s.Key] = hoststatus.Oplog{Entries: s.Entries, Bytes: s.Bytes}
		}
	}
	for i, a := range list {
		c := cfg.Agent[a.Name]
		if c == nil || !c.Durable {
			continue
		}
		o := single[a.Name]
		if c.Instances == config.InstancesPerSession {
			o = sessions[a.Name]
		}
		list[i].Oplog = &o
	}
	return list
}

// OplogStats are the oplog store's counters since it was opened (false:
// it was not, no durable agent has run): metrics reads them at scrape
// time.
func (d *Daemon) OplogStats() (oplog.Stats, bool) {
	st := d.g.OpenedOplog()
	if st == nil {
		return oplog.Stats{}, false
	}
	return st.Stats(), true
}
