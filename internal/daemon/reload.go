package daemon

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/gateway"
)

// plan is what a reload changes, by name.
type plan struct {
	addTooling, removeTooling, changeTooling []string
	addAgent, removeAgent, changeAgent       []string
	// policyAgent changed only in their grants tables: the new policy is
	// applied to the running agent, no restart.
	policyAgent []string
	hostChanged bool
}

func (p plan) empty() bool {
	return len(p.addTooling)+len(p.removeTooling)+len(p.changeTooling)+
		len(p.addAgent)+len(p.removeAgent)+len(p.changeAgent)+len(p.policyAgent) == 0
}

// diff compares two configs entry by entry. An agent granted a tooling
// that changes counts as changed too: its handles would point at the old
// session, so it restarts with the new one.
func diff(old, cur *config.Config) plan {
	var p plan
	p.addTooling, p.removeTooling, p.changeTooling = diffMaps(old.Tooling, cur.Tooling)
	p.addAgent, p.removeAgent, p.changeAgent = diffMaps(old.Agent, cur.Agent)
	p.hostChanged = !reflect.DeepEqual(old.Host, cur.Host)
	for _, name := range sortedKeys(cur.Agent) {
		if _, existed := old.Agent[name]; !existed || slices.Contains(p.changeAgent, name) {
			continue
		}
		if slices.ContainsFunc(cur.Agent[name].Toolings, func(t string) bool { return slices.Contains(p.changeTooling, t) }) {
			p.changeAgent = append(p.changeAgent, name)
		}
	}
	slices.Sort(p.changeAgent)
	p.changeAgent = slices.DeleteFunc(p.changeAgent, func(name string) bool {
		live := policyOnly(old.Agent[name], cur.Agent[name]) &&
			!slices.ContainsFunc(cur.Agent[name].Toolings, func(t string) bool { return slices.Contains(p.changeTooling, t) })
		if live {
			p.policyAgent = append(p.policyAgent, name)
		}
		return live
	})
	return p
}

func diffMaps[V any](old, cur map[string]V) (added, removed, changed []string) {
	for _, name := range sortedKeys(cur) {
		o, ok := old[name]
		switch {
		case !ok:
			added = append(added, name)
		case !reflect.DeepEqual(o, cur[name]):
			changed = append(changed, name)
		}
	}
	for _, name := range sortedKeys(old) {
		if _, ok := cur[name]; !ok {
			removed = append(removed, name)
		}
	}
	return added, removed, changed
}

// Reload re-reads and validates the config file. On any error the running
// config stays and the error says why (a config error lists every problem
// with file:line:col). Otherwise agents and toolings that were added are
// started, removed ones stopped, changed ones (and agents granted a changed
// tooling, and agents whose component file has a new content) restarted,
// except agents whose grants tables alone changed: they get the new policy
// while they run (logged as such); unchanged ones and their sessions are not
// touched. Changes to [host] need a restart of
// toolhostd and are only logged. A reload that adds the first agent with
// limits.fuel > 0 to a daemon started without one is refused
// (ErrNeedsFuel): fuel metering is an engine setting.
func (d *Daemon) Reload() error {
	d.opMu.Lock()
	defer d.opMu.Unlock()
	if err := d.g.Agents.Serving(); err != nil {
		return err
	}
	d.mu.Lock()
	old := d.cfg
	d.mu.Unlock()

	cur, p, made, err := d.planReload(old)
	if err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	if p.empty() {
		d.mu.Lock()
		d.cfg = cur
		d.mu.Unlock()
		d.reloaded(cur)
		d.log.Info("reload: nothing changed")
		return nil
	}
	d.notify.reloading()
	defer d.notify.send("READY=1")
	d.log.Info("reloading",
		zap.Strings("agents_added", p.addAgent), zap.Strings("agents_removed", p.removeAgent), zap.Strings("agents_changed", p.changeAgent),
		zap.Strings("agents_policy_applied", p.policyAgent),
		zap.Strings("toolings_added", p.addTooling), zap.Strings("toolings_removed", p.removeTooling), zap.Strings("toolings_changed", p.changeTooling))

	// 0. Policies: the running agents see their new grants from their
	// next operation on.
	if len(p.policyAgent) > 0 {
		d.g.Agents.ApplyPolicies(cur.Agent, p.policyAgent)
		d.log.Info("reload: grants applied to the running agents without a restart", zap.Strings("agents", p.policyAgent))
	}
	// 1. Stop the agents that go or change (restarted in 3).
	d.g.Agents.StopAgents(append(slices.Clone(p.removeAgent), p.changeAgent...), handOver(cur, p))
	// 2. Toolings: take out the removed and changed ones, then serve the new.
	errs := d.swapToolings(p, made)
	// 3. Agents: forget the removed, start the added and changed afresh.
	d.startAgents(cur, p)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("reload: applied with errors: %w", err)
	}
	d.log.Info("reloaded")
	return nil
}

// planReload loads and checks the config file against the running one
// (old) and returns it with what changes and the toolings it adds or
// changes, built before anything is touched: a tooling that cannot be made
// refuses the whole reload. On an error the running config stays (logged).
func (d *Daemon) planReload(old *config.Config) (*config.Config, plan, map[string]*toolingRec, error) {
	cur, err := config.Load(d.cfgPath)
	if err != nil {
		d.log.Error("reload refused: the config has errors; keeping the running one", zap.String("config", d.cfgPath), zap.Error(err))
		return nil, plan{}, nil, err
	}
	refuse := func(err error) (*config.Config, plan, map[string]*toolingRec, error) {
		d.log.Error("reload refused; keeping the running config", zap.Error(err))
		return nil, plan{}, nil, err
	}
	// [host] applies at restart: the running thread limit bounds the agents.
	if err := checkThreads(cur, maxThreads(old)); err != nil {
		return refuse(err)
	}
	if needsFuel(cur) && !d.g.MetersFuel() {
		return refuse(ErrNeedsFuel)
	}
	p := diff(old, cur)
	d.componentsChanged(&p, cur)
	if p.hostChanged {
		d.log.Warn("reload: [host] changed; those settings apply only when toolhostd restarts")
	}
	fresh := make(map[string]*config.Tooling)
	for _, name := range append(slices.Clone(p.addTooling), p.changeTooling...) {
		fresh[name] = cur.Tooling[name]
	}
	made, err := d.makeToolings(fresh)
	if err != nil {
		return refuse(err)
	}
	return cur, p, made, nil
}

// swapToolings takes the removed and changed toolings of p out of the hub
// and serves the added and changed ones (made by planReload). It goes on
// past a failure and returns every one.
func (d *Daemon) swapToolings(p plan, made map[string]*toolingRec) []error {
	var errs []error
	for _, name := range append(slices.Clone(p.removeTooling), p.changeTooling...) {
		if err := d.g.Hub.RemoveTooling(name); err != nil {
			errs = append(errs, err)
			d.log.Error("reload: removing a tooling", zap.String("tooling", name), zap.Error(err))
		}
	}
	for _, name := range p.removeTooling {
		d.tools.remove(name)
	}
	if m := d.g.Metrics; m != nil {
		for _, name := range p.removeTooling {
			m.ForgetTooling(name)
		}
		for _, name := range p.removeAgent {
			m.ForgetAgent(name)
		}
	}
	for _, name := range append(slices.Clone(p.addTooling), p.changeTooling...) {
		r := made[name]
		if err := d.g.Hub.AddTooling(gateway.Entry{Tooling: r.t, Limits: gateway.LimitsFrom(r.cfg)}); err != nil {
			errs = append(errs, err)
			d.log.Error("reload: adding a tooling", zap.String("tooling", name), zap.Error(err))
			continue
		}
		d.tools.put(name, r)
	}
	return errs
}

// startAgents forgets the removed agents of p, starts the added and
// changed ones afresh (those this host runs) and makes cur the running
// config.
func (d *Daemon) startAgents(cur *config.Config, p plan) {
	d.g.Agents.Replace(cur.Agent, p.removeAgent, append(slices.Clone(p.addAgent), p.changeAgent...), d.startsOnReload)
	d.mu.Lock()
	d.cfg = cur
	d.mu.Unlock()
	d.reloaded(cur)
}

// componentsChanged adds to p the agents whose config is unchanged but
// whose component file now has another content than the one they were
// started with: they restart on the new one.
func (d *Daemon) componentsChanged(p *plan, cur *config.Config) {
	started := d.g.Agents.Contents()
	for _, name := range sortedKeys(cur.Agent) {
		was := started[name]
		if was == "" || slices.Contains(p.addAgent, name) || slices.Contains(p.changeAgent, name) {
			continue
		}
		if now, err := d.g.Host.ContentKey(cur.Agent[name].Component); err == nil && now != was {
			d.log.Info("reload: the component file changed", zap.String("agent", name), zap.String("component", cur.Agent[name].Component))
			p.changeAgent = append(p.changeAgent, name)
		}
	}
	slices.Sort(p.changeAgent)
}

// handOver reports the changed agents whose instance a reload hands over
// to the next with its open messages: durable before and after, one
// instance started with the host (a per-session agent's sessions, an
// on-message agent's instance are wound down as before).
func handOver(cur *config.Config, p plan) func(name string) bool {
	return func(name string) bool {
		if !slices.Contains(p.changeAgent, name) {
			return false
		}
		a := cur.Agent[name]
		return a != nil && a.Durable && a.Instances != config.InstancesPerSession && a.Start != config.StartOnMessage
	}
}
