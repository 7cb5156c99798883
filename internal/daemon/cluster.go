package daemon

// [cluster]: the daemon is one host of several that share the config's
// agents through etcd (internal/cluster). It then starts an agent only
// when its cluster node claimed it, stops it when the node hands it over or
// fences, and caps every agent's stop grace at the node's stop budget.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"reflect"
	"sync/atomic"

	"github.com/toolhostd/toolhostd/internal/cluster"
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	hoststatus "github.com/toolhostd/toolhostd/internal/status"
	"github.com/toolhostd/toolhostd/internal/supervisor"
)

// clusterState is the daemon's cluster part (its pieces are the graph's,
// system.ClusterParts).
type clusterState struct {
	stop context.CancelFunc
	done chan struct{}
	// placed is what the node places (placement), the running config's.
	placed atomic.Pointer[cluster.Placement]
}

// placementOf is cfg's cluster.Placement: what the node places (read
// without the daemon's lock: a reload refreshes the node holding d.mu).
func (d *Daemon) placementOf(cfg *config.Config) *cluster.Placement {
	return &cluster.Placement{Agents: placedAgents(cfg), Lazy: lazyAgents(cfg), Digest: fileDigest(d.cfgPath)}
}

// fileDigest is the sha256 of the config file ("" when it cannot be read).
func fileDigest(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || path == "" {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// clustered reports whether the daemon is a cluster host.
func (d *Daemon) clustered() bool { return d.cluster != nil }

// runCluster starts the node (Serve, after the root supervisor exists).
func (d *Daemon) runCluster() {
	if d.cluster == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.cluster.stop, d.cluster.done = cancel, make(chan struct{})
	go func() {
		defer close(d.cluster.done)
		_ = d.g.Cluster.Node.Run(ctx)
	}()
}

// stopCluster leaves the cluster: the node stops this host's agents and
// revokes its lease (before Serve's shutdown, which needs opMu).
func (d *Daemon) stopCluster() {
	if d.cluster == nil || d.cluster.stop == nil {
		return
	}
	d.cluster.stop()
	<-d.cluster.done
}

// listed reports whether Agents shows the agent: in a cluster, only the
// agents this host holds or still runs (supervised).
func (d *Daemon) listed(name string, supervised bool) bool {
	return d.cluster == nil || supervised || d.g.Cluster.Node.Owns(name)
}

// clusterReady is the cluster's part of Ready.
func (d *Daemon) clusterReady() bool { return d.cluster == nil || d.g.Cluster.Node.Ready() }

// checkOwner refuses an operator's start or restart of an agent another
// host runs.
func (d *Daemon) checkOwner(name string) error {
	if d.cluster != nil && !d.g.Cluster.Node.Owns(name) && !d.everyHost(name) {
		return fmt.Errorf("%w: %q", ErrNotOwner, name)
	}
	return nil
}

// reloaded applies a new config to the protocol endpoints (which agents
// are exposed) and tells the node its agents and digest.
func (d *Daemon) reloaded(cur *config.Config) {
	d.g.Endpoints.Expose(cur)
	if d.cluster == nil {
		return
	}
	if cur.Cluster == nil || !reflect.DeepEqual(*cur.Cluster, d.g.Cluster.Config) {
		d.log.Warn("reload: [cluster] changed; it applies only when toolhostd restarts")
	}
	d.cluster.placed.Store(d.placementOf(cur))
	d.g.Cluster.Node.Refresh()
}

// startsOnReload reports whether a reload starts an added or changed agent
// here: in a cluster only one this host holds or a per-session agent,
// which every host runs (the node starts the rest once claimed).
func (d *Daemon) startsOnReload(name string, a *config.Agent) bool {
	return d.cluster == nil || d.g.Cluster.Node.Owns(name) || isPerSession(a)
}

// everyHost reports a per-session agent, which every host runs.
func (d *Daemon) everyHost(name string) bool {
	a := d.g.Agents.Agent(name)
	return a != nil && isPerSession(a)
}

// Cluster reports the cluster's view; false without [cluster].
func (d *Daemon) Cluster() (control.ClusterStatus, bool) {
	if d.cluster == nil {
		return control.ClusterStatus{}, false
	}
	st := d.g.Cluster.Node.Status()
	out := control.ClusterStatus{
		Name: st.Name, Joined: st.Joined, Fencing: st.Fencing, Lease: st.Lease,
		LastRenew: st.LastRenew, Digest: st.Digest, Owners: st.Owners, Owned: st.Owned,
		ClusterCounts: hoststatus.ClusterCounts{Claims: st.Counts.Claims, Moves: st.Counts.Moves, Fences: st.Counts.Fences,
			Lost: st.Counts.Lost, Requests: st.Requests},
	}
	for _, m := range st.Members {
		out.Members = append(out.Members, control.ClusterMember{
			Name: m.Name, Digest: m.Digest, Settled: m.Settled, Agents: m.Agents,
			SameConfig: m.Digest == st.Digest, Address: m.Address, Sessions: m.Sessions,
		})
	}
	return out, true
}

// clusterRunner is the daemon as the node's Runner.
type clusterRunner struct{ d *Daemon }

func (c clusterRunner) Start(name string) {
	d := c.d
	d.opMu.Lock()
	defer d.opMu.Unlock()
	_, _ = d.g.Agents.Start(name, "agent placed here")
}

func (c clusterRunner) Stop(name string) {
	d := c.d
	d.opMu.Lock()
	defer d.opMu.Unlock()
	if !d.g.Agents.Configured(name) {
		return
	}
	d.g.Agents.Release(name)
	d.settleMessages() // before the node hands the agent over
}

// Halt stops every running instance at once and waits, without the
// operation lock (a reload may hold it): the fence's fast path. Until
// Resume no instance starts.
func (c clusterRunner) Halt() { c.d.g.Agents.Halt() }

// Resume lets instances start again (a new session).
func (c clusterRunner) Resume() { c.d.g.Agents.Resume() }

func (c clusterRunner) State(name string) string {
	if s, ok := c.d.g.Agents.State(name); ok {
		return s.String()
	}
	return ""
}

// Sessions lists the agent's per-session instances by state (for the
// cluster's view).
func (c clusterRunner) Sessions(name string) map[string]string { return c.d.g.Agents.Sessions(name) }

func (c clusterRunner) Started(name string) bool {
	s, ok := c.d.g.Agents.State(name)
	return ok && s != supervisor.Starting
}
