package idem

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// shareFor is how long a granted lease takes new records: the records
// claimed within it share it (one lease grant a shareFor rather than one
// per message). A record's lease then expires up to shareFor sooner than
// the TTL after its claim; the renewals (every TTL/3 while its message is
// open, and once at its end) keep it the TTL past the end.
func (l *Ledger) shareFor() time.Duration { return min(time.Second, l.o.TTL/10) }

// recordLease is the lease for a new record: the shared one while it is
// younger than shareFor, else a new one.
func (l *Ledger) recordLease(ctx context.Context) (clientv3.LeaseID, error) {
	now := time.Now()
	l.mu.Lock()
	if l.leases.shared != 0 && now.Sub(l.leases.grantAt) < l.shareFor() {
		id := l.leases.shared
		l.mu.Unlock()
		return id, nil
	}
	l.mu.Unlock()
	g, err := l.cli.Grant(ctx, l.ttlSeconds())
	if err != nil {
		return 0, fmt.Errorf("etcd: lease: %w", err)
	}
	l.mu.Lock()
	l.leases.shared, l.leases.grantAt = g.ID, now
	l.mu.Unlock()
	return g.ID, nil
}

// dropLease forgets the shared lease etcd no longer has.
func (l *Ledger) dropLease(id clientv3.LeaseID) {
	l.mu.Lock()
	if l.leases.shared == id {
		l.leases.shared = 0
	}
	l.mu.Unlock()
}

// ttlSeconds is the records' lease TTL.
func (l *Ledger) ttlSeconds() int64 { return int64((l.o.TTL + time.Second - 1) / time.Second) }
