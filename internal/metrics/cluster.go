package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The cluster's series, read at scrape time from a Source that has
// Cluster, with [cluster] (none otherwise).
var (
	descClusterJoined   = desc("cluster", "joined", "1 while this host holds its lease and member key.", "member")
	descClusterFencing  = desc("cluster", "fencing", "1 while this host has stopped its agents for a lease it could not renew.", "member")
	descClusterMembers  = desc("cluster", "members", "Live members of the cluster, as this host sees them.", "member")
	descClusterSettled  = desc("cluster", "members_settled", "Live members that count for placement (seen for the settle time).", "member")
	descClusterMismatch = desc("cluster", "members_other_config", "Live members whose config digest differs from this host's.", "member")
	descClusterOwned    = desc("cluster", "owned_agents", "Agents whose ownership key this host holds.", "member")
	descClusterClaims   = desc("cluster", "claims_total", "Ownership keys this host claimed.", "member")
	descClusterMoves    = desc("cluster", "moves_total", "Agents this host handed over to another member (stopped, then released).", "member")
	descClusterFences   = desc("cluster", "fences_total", "Times this host fenced itself: stopped every agent for a lease it could not renew.", "member")
	descClusterLost     = desc("cluster", "lost_total", "Agents stopped because their ownership key vanished while this host held it.", "member")
	descClusterRequests = desc("cluster", "etcd_requests_total", "Requests this host made to etcd.", "member")
)

// clusterCollector reports the cluster's series.
type clusterCollector struct{ state *stateCollector }

func (c clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descClusterJoined, descClusterFencing, descClusterMembers, descClusterSettled,
		descClusterMismatch, descClusterOwned, descClusterClaims, descClusterMoves, descClusterFences, descClusterLost, descClusterRequests} {
		ch <- d
	}
}

func (c clusterCollector) Collect(ch chan<- prometheus.Metric) {
	cb, ok := c.state.source.(clusterSource)
	if !ok {
		return
	}
	st, ok := cb.Cluster()
	if !ok {
		return
	}
	settled, other := 0, 0
	for _, m := range st.Members {
		if m.Settled {
			settled++
		}
		if !m.SameConfig {
			other++
		}
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, st.Name)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, st.Name)
	}
	gauge(descClusterJoined, b2f(st.Joined))
	gauge(descClusterFencing, b2f(st.Fencing))
	gauge(descClusterMembers, float64(len(st.Members)))
	gauge(descClusterSettled, float64(settled))
	gauge(descClusterMismatch, float64(other))
	gauge(descClusterOwned, float64(len(st.Owned)))
	counter(descClusterClaims, float64(st.Claims))
	counter(descClusterMoves, float64(st.Moves))
	counter(descClusterFences, float64(st.Fences))
	counter(descClusterLost, float64(st.Lost))
	counter(descClusterRequests, float64(st.Requests))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
