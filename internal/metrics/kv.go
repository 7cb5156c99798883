package metrics

// The key-value store's series: what each agent keeps (read from the
// store at scrape time, at most once per kvUsageEvery and bounded by
// kvUsageTimeout) and its operations by kind and outcome.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolhostd/toolhostd/internal/kv"
)

// Bounds of the usage a scrape reads: a scrape within kvUsageEvery of the
// last read reports what that read found, and a read that takes longer
// than kvUsageTimeout reports the last values found.
const (
	kvUsageEvery   = 10 * time.Second
	kvUsageTimeout = 2 * time.Second
)

var (
	descKVKeys  = desc("kv", "keys", "Keys the agent keeps in the key-value store, over all its buckets.", "agent")
	descKVBytes = desc("kv", "bytes", "Bytes of keys and values the agent keeps in the key-value store.", "agent")
	descKVOps   = desc("kv", "operations_total", "Key-value operations by kind (open, get, set, ..., admin for the operators') and outcome (ok, no_such_store, access_denied, quota, cas_failed, error).", "op", "outcome")
)

// KVSource is the key-value store the series come from (*kv.Service).
type KVSource interface {
	Ops() []kv.OpCount
	Usage(ctx context.Context) ([]kv.AgentUsage, error)
}

// kvCollector reports the key-value store's series, none until KV is
// called.
type kvCollector struct {
	src atomic.Pointer[kvBox]

	mu    sync.Mutex
	read  time.Time // of usage
	usage []kv.AgentUsage
}

type kvBox struct{ s KVSource }

// KV makes scrapes report the key-value store src (nil: none).
func (m *Metrics) KV(src KVSource) {
	if src == nil {
		m.kv.src.Store(nil)
		return
	}
	m.kv.src.Store(&kvBox{src})
}

func (c *kvCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descKVKeys
	ch <- descKVBytes
	ch <- descKVOps
}

func (c *kvCollector) Collect(ch chan<- prometheus.Metric) {
	box := c.src.Load()
	if box == nil {
		return
	}
	for _, o := range box.s.Ops() {
		ch <- prometheus.MustNewConstMetric(descKVOps, prometheus.CounterValue, float64(o.N), o.Op, o.Outcome)
	}
	for _, u := range c.usageOf(box.s) {
		ch <- prometheus.MustNewConstMetric(descKVKeys, prometheus.GaugeValue, float64(u.Keys), u.Agent)
		ch <- prometheus.MustNewConstMetric(descKVBytes, prometheus.GaugeValue, float64(u.Bytes), u.Agent)
	}
}

// usageOf is what each agent keeps, read again when the last read is
// older than kvUsageEvery (a failed read keeps the last values).
func (c *kvCollector) usageOf(s KVSource) []kv.AgentUsage {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.read.IsZero() && time.Since(c.read) < kvUsageEvery {
		return c.usage
	}
	ctx, cancel := context.WithTimeout(context.Background(), kvUsageTimeout)
	defer cancel()
	if u, err := s.Usage(ctx); err == nil {
		c.usage = u
	}
	c.read = time.Now()
	return c.usage
}
