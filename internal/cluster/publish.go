package cluster

// The member key's value: what this member publishes (its config digest,
// control API address, agents and sessions), kept current.

import (
	"context"
	"encoding/json"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// info is this member's key value now.
func (n *Node) info() memberInfo {
	n.mu.Lock()
	names := make([]string, 0, len(n.held.agents))
	for a, la := range n.held.agents {
		if !la.stopped {
			names = append(names, a)
		}
	}
	digest := n.place.digest
	held := make([]sessionID, 0, len(n.held.sessions))
	for id := range n.held.sessions {
		held = append(held, id)
	}
	n.mu.Unlock()
	states := make(map[string]string, len(names))
	for _, a := range names {
		if s := n.o.Runner.State(a); s != "" {
			states[a] = s
		}
	}
	// The sessions this host holds, in the state its Runner reports.
	var sessions map[string]map[string]string
	sl, _ := n.o.Runner.(SessionLister)
	live := map[string]map[string]string{}
	for _, id := range held {
		if sessions == nil {
			sessions = map[string]map[string]string{}
		}
		if sessions[id.agent] == nil {
			sessions[id.agent] = map[string]string{}
			if sl != nil {
				live[id.agent] = sl.Sessions(id.agent)
			}
		}
		state := live[id.agent][id.session]
		if state == "" {
			state = "claimed"
		}
		sessions[id.agent][id.session] = state
	}
	return memberInfo{Name: n.o.Name, Digest: digest, Address: n.o.Address, Agents: states, Sessions: sessions}
}

// publish keeps the member key's value (digest, agents and states)
// current, at most about once a second.
func (n *Node) publish(ctx context.Context, lease clientv3.LeaseID) {
	var last []byte
	t := time.NewTicker(publishEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		val, err := json.Marshal(n.info())
		if err != nil || string(val) == string(last) {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, n.o.LeaseTTL/requestDiv)
		_, err = n.cli.Put(pctx, n.memberKey(n.o.Name), string(val), clientv3.WithLease(lease))
		cancel()
		n.count()
		if err == nil {
			last = val
		}
	}
}

// publishEvery is how often the member key's value is refreshed.
const publishEvery = time.Second
