package idem

import (
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/message"
)

// Resume implements message.Ledger: this host claims again the record of
// message id, which a durable agent resumes here after the host that
// claimed it stopped. The record becomes claimed by this host when it is
// id's and either claimed by a host that is no longer the member it
// claimed as, or settled by a retry as lost (Lost); a record gone (past
// the retention) is claimed anew. A record that ended with id's real
// outcome, is another message's, or is held by a live member other than
// this host, is left as it is: c is nil.
func (l *Ledger) Resume(ctx context.Context, agent, key, id string) (message.Claim, error) {
	ctx, cancel := context.WithTimeout(ctx, l.o.Timeout)
	defer cancel()
	k := l.key(agent, key)
	for range 4 {
		self, err := l.selfLease(ctx)
		if err != nil {
			return nil, err
		}
		get, err := l.cli.Get(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("etcd: %w", err)
		}
		cmp := clientv3.Compare(clientv3.CreateRevision(k), "=", 0) // gone: claim it anew
		from := ""                                                  // the host that claimed it
		if len(get.Kvs) > 0 {
			var old record
			if err := json.Unmarshal(get.Kvs[0].Value, &old); err != nil {
				return nil, fmt.Errorf("record %s: %w", k, err)
			}
			take, err := l.takesOver(ctx, old, id, self)
			if err != nil || !take {
				return nil, err
			}
			cmp, from = clientv3.Compare(clientv3.ModRevision(k), "=", get.Kvs[0].ModRevision), old.Host
		}
		c, resp, err := l.put(ctx, k, id, self, cmp)
		switch {
		case err != nil:
			return nil, err
		case c != nil:
			l.log.Info("idempotency key of a resumed message claimed again", zap.String("message_id", id), zap.String("from_host", from))
			return c, nil
		case resp != nil: // the record, or this host's member key, changed: read again
			l.setSelf(nil)
		}
	}
	return nil, fmt.Errorf("the record of the key changed under four attempts: %w", ErrContended)
}

// takesOver reports whether old, a record of the key, is one this host
// claims again for the resumed message id.
func (l *Ledger) takesOver(ctx context.Context, old record, id string, self clientv3.LeaseID) (bool, error) {
	switch {
	case old.Message != id:
		return false, nil // the key now names another message
	case old.State == stateEnded:
		return old.Lost, nil
	case old.Host == l.o.Host && old.HostLease == int64(self):
		return false, nil // this host's own live claim
	}
	resp, err := l.cli.Get(ctx, l.memberKey(old.Host))
	if err != nil {
		return false, fmt.Errorf("etcd: %w", err)
	}
	live := len(resp.Kvs) > 0 && resp.Kvs[0].Lease == old.HostLease
	return !live, nil
}
