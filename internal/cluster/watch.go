package cluster

// The view of the cluster's keys: members and ownership keys, listed once
// and then watched; listed again when the watch breaks.

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// watch keeps n.view (members, ownership and session keys) current until
// ctx ends.
func (n *Node) watch(ctx context.Context) {
	root := n.o.Prefix + "/"
	for ctx.Err() == nil {
		lctx, cancel := context.WithTimeout(ctx, n.o.LeaseTTL/fenceDiv)
		resp, err := n.cli.Get(lctx, root, clientv3.WithPrefix())
		cancel()
		n.count()
		if err != nil {
			n.log.Debug("list the cluster's keys", zap.Error(err))
			sleep(ctx, n.o.LeaseTTL/requestDiv)
			continue
		}
		n.relist(resp.Kvs, resp.Header.Revision)
		wch := n.cli.Watch(clientv3.WithRequireLeader(ctx), root, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
		for wr := range wch {
			if err := wr.Err(); err != nil {
				n.log.Debug("the watch broke; listing again", zap.Error(err))
				break
			}
			n.apply(wr.Events, wr.Header.Revision)
		}
	}
}

// relist replaces the view by a listing.
func (n *Node) relist(kvs []*mvccpb.KeyValue, rev int64) {
	now := time.Now()
	n.mu.Lock()
	old := n.view.members
	n.view.reset()
	for _, kv := range kvs {
		n.putLocked(kv, now)
	}
	for name, m := range n.view.members {
		if o := old[name]; o != nil {
			m.since = o.since // still present: its settle time runs on
		}
	}
	for name := range old {
		if n.view.members[name] == nil {
			n.view.departed++
		}
	}
	for name := range n.wait.gone {
		if n.view.members[name] == nil {
			n.wait.goneMember(name)
		}
	}
	n.view.synced, n.view.rev = true, rev
	n.wait.notify()
	n.mu.Unlock()
	n.poke()
}

// apply applies watch events to the view.
func (n *Node) apply(evs []*clientv3.Event, rev int64) {
	now := time.Now()
	n.mu.Lock()
	for _, ev := range evs {
		if ev.Type == clientv3.EventTypePut {
			n.putLocked(ev.Kv, now)
			continue
		}
		n.deleteLocked(string(ev.Kv.Key))
	}
	n.view.rev = max(n.view.rev, rev)
	n.wait.notify()
	n.mu.Unlock()
	n.poke()
}

func (n *Node) putLocked(kv *mvccpb.KeyValue, now time.Time) {
	kind, name := n.split(string(kv.Key))
	switch kind {
	case "members":
		var info memberInfo
		if json.Unmarshal(kv.Value, &info) != nil {
			return
		}
		if m := n.view.members[name]; m != nil {
			m.info = info
			return
		}
		n.view.members[name] = &member{info: info, since: now}
	case "agents":
		var info ownerInfo
		if json.Unmarshal(kv.Value, &info) != nil {
			return
		}
		n.view.owners[name] = owner{host: info.Host, lease: clientv3.LeaseID(kv.Lease)}
	case "sessions":
		var info ownerInfo
		id, ok := parseSession(name)
		if !ok || json.Unmarshal(kv.Value, &info) != nil {
			return
		}
		n.view.sessOwners[id] = owner{host: info.Host, lease: clientv3.LeaseID(kv.Lease)}
	}
}

func (n *Node) deleteLocked(key string) {
	kind, name := n.split(key)
	switch kind {
	case "members":
		if n.view.members[name] != nil {
			n.view.departed++
		}
		delete(n.view.members, name)
		n.wait.goneMember(name)
	case "agents":
		delete(n.view.owners, name)
	case "sessions":
		if id, ok := parseSession(name); ok {
			delete(n.view.sessOwners, id)
		}
	}
}

// split parses PREFIX/KIND/NAME.
func (n *Node) split(key string) (kind, name string) {
	rest, ok := strings.CutPrefix(key, n.o.Prefix+"/")
	if !ok {
		return "", ""
	}
	kind, name, _ = strings.Cut(rest, "/")
	return kind, name
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
