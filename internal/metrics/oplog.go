package metrics

// The durable agents' series: the oplog store's counters, read at scrape
// time from a Source that has OplogStats (none before the store is
// opened), and the replays of each agent, counted as they happen.

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolhostd/toolhostd/internal/oplog"
)

var (
	descOplogAppends = desc("oplog", "appends_total", "Appends to the durable agents' oplogs, whatever their outcome.")
	descOplogEntries = desc("oplog", "entries_total", "Oplog entries committed (appends that succeeded).")
	descOplogBytes   = desc("oplog", "bytes_total", "Stored bytes of the oplog entries committed.")
	descOplogCommits = desc("oplog", "commits_total", "Synced writes of the oplog store (a journal record on one host, a transaction over etcd): of appends, grouped, and of creating and deleting logs; folding the journal into bbolt is not counted.")
)

// OplogSource is a Source that may have an oplog store (the daemon):
// OplogStats are its counters since it was opened, false while it is not.
type OplogSource interface {
	OplogStats() (oplog.Stats, bool)
}

// oplogCollector reports the oplog store's counters.
type oplogCollector struct{ state *stateCollector }

func (c oplogCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descOplogAppends, descOplogEntries, descOplogBytes, descOplogCommits} {
		ch <- d
	}
}

func (c oplogCollector) Collect(ch chan<- prometheus.Metric) {
	src, ok := c.state.source.(OplogSource)
	if !ok {
		return
	}
	st, ok := src.OplogStats()
	if !ok {
		return
	}
	for _, s := range []struct {
		d *prometheus.Desc
		v uint64
	}{{descOplogAppends, st.Appends}, {descOplogEntries, st.Entries}, {descOplogBytes, st.Bytes}, {descOplogCommits, st.Commits}} {
		ch <- prometheus.MustNewConstMetric(s.d, prometheus.CounterValue, float64(s.v))
	}
}

// replaySeries are the durable agents' replay series, registered with
// the first use.
type replaySeries struct {
	once        sync.Once
	replays     *prometheus.CounterVec
	entries     *prometheus.CounterVec
	divergences *prometheus.CounterVec
}

func (m *Metrics) replaySeries() *replaySeries {
	r := &m.replay
	r.once.Do(func() {
		r.replays = counterVec("agent", "replays_total",
			"Instances of a durable agent started from the oplog an earlier one left, by agent.",
			"agent")
		r.entries = counterVec("agent", "replayed_entries_total",
			"Oplog entries answered from the oplog to replaying instances, by agent.",
			"agent")
		r.divergences = counterVec("agent", "divergences_total",
			"Replays that ended because the instance made another call than its oplog recorded, by agent.",
			"agent")
		m.reg.MustRegister(r.replays, r.entries, r.divergences)
	})
	return r
}

// AgentReplayed records that an instance of the agent was started from
// its oplog, replaying entries of it.
func (m *Metrics) AgentReplayed(agent string, entries int) {
	r := m.replaySeries()
	r.replays.WithLabelValues(agent).Inc()
	if entries > 0 {
		r.entries.WithLabelValues(agent).Add(float64(entries))
	} else {
		r.entries.WithLabelValues(agent) // the series exists from the first replay
	}
}

// AgentDiverged records that a replay of the agent diverged from its
// oplog.
func (m *Metrics) AgentDiverged(agent string) {
	m.replaySeries().divergences.WithLabelValues(agent).Inc()
}

// forgetReplays drops the replay series matching l.
func (m *Metrics) forgetReplays(l prometheus.Labels) {
	r := m.replaySeries()
	for _, v := range []*prometheus.CounterVec{r.replays, r.entries, r.divergences} {
		v.DeletePartialMatch(l)
	}
}
