// Package idem is the idempotency ledger of a cluster (message.Ledger in
// etcd): a message's idempotency key is delivered at most once across the
// hosts, also when its agent moves and when the host that delivered it
// dies in the middle of the reply.
//
// Per (agent, key) there is one record, PREFIX/idempotency/AGENT/SHA256
// (the hex sha256 of the key), on a lease of the ledger's, not the host's,
// whose TTL is the message retention: it outlives the host that wrote it
// (the records a host claims within a second share a lease). A record is
//
//   - claimed: host H (while it held the lease L that its member key
//     PREFIX/members/H is on) delivers message ID. The claim is written in a
//     transaction only if the record is absent and H's member key is on L,
//     before the message is handed to any instance. Its lease is renewed
//     while the message is open.
//   - ended: message ID ended with Outcome (its terminal event: the whole
//     reply, or the error). The lease is renewed once then, so the record
//     stays for the retention after the end.
//
// A claim whose message was refused before any instance took it (busy,
// unavailable, ...) is deleted, so that a retry can deliver. Every change
// of an existing record is a transaction on the mod revision it read.
//
// Why a key is never delivered twice: a message with a key is delivered
// only after its claim was created, and the claim is created only where no
// record exists. A record goes away only (a) by its release, written by the
// host that claimed it after its delivery was refused, so nothing was
// delivered; or (b) when its lease expires, the retention after it was last
// renewed: while its message is open the claiming host renews it, so (b)
// happens only once the message ended (or its host died) a retention ago,
// after which the key is forgotten, as on one host. A retry that finds
// a claim whose host is no longer a member with the lease it claimed
// under (it died, or was fenced and its agents stopped) cannot know
// whether that host's instance got the message: the record becomes ended
// with an unavailable error, "delivered to host H, which stopped before
// the reply completed; its outcome is unknown", and is never delivered
// again. A host that outlives that (a fenced one) finds its own later
// writes refused, the mod revision having changed.
//
// The outcome is written after the reply ended (in the background; a
// host's agents are handed over only after Flush): a caller that saw
// the whole reply, from a host that died before writing its outcome, gets
// the unknown-outcome error on a retry, not the reply. With etcd out of
// reach a message with a key is refused unavailable within Timeout.
package idem

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Defaults of Options left at zero.
const (
	DefaultTimeout  = 5 * time.Second
	DefaultMaxReply = 256 << 10
)

// Record states.
const (
	stateClaimed = "claimed"
	stateEnded   = "ended"
)

// Options configure a Ledger.
type Options struct {
	// Client reaches the cluster's etcd.
	Client *clientv3.Client
	// Prefix is the cluster's key prefix; Host this host's member name
	// (its member key is PREFIX/members/HOST, internal/cluster).
	Prefix, Host string
	// TTL is how long a record stays once its message ended: the message
	// retention (message.DefaultRetention; at least a second).
	TTL time.Duration
	// Timeout bounds a claim (DefaultTimeout).
	Timeout time.Duration
	// MaxReply bounds the reply text a record keeps (DefaultMaxReply); a
	// longer reply is replayed elsewhere as an error saying so.
	MaxReply int
	// Log gets the writes that failed, at warn.
	Log *zap.Logger
}

// record is a key's value in etcd.
type record struct {
	State string `json:"state"`
	Host  string `json:"host"`
	// HostLease is the lease the host's member key was on when it
	// claimed: the host is that member while its key is on that lease.
	HostLease int64          `json:"host_lease"`
	Message   string         `json:"message"`
	Claimed   time.Time      `json:"claimed"`
	Ended     time.Time      `json:"ended,omitzero"`
	Outcome   *message.Event `json:"outcome,omitempty"`
	// Lost: the outcome is the unknown-outcome error a retry settled the
	// record with after its host stopped; a durable agent's next host,
	// resuming the message, claims the record again (Resume).
	Lost bool `json:"lost,omitempty"`
}

// Ledger is the etcd ledger; its methods are safe for concurrent use.
type Ledger struct {
	o   Options
	cli *clientv3.Client
	log *zap.Logger

	mu      sync.Mutex
	leases  leases          // guarded by mu
	open    map[*claim]bool // claimed, not ended: their leases are renewed
	pending map[*claim]bool // an end or a release not recorded yet
	changed chan struct{}   // closed and replaced when pending shrinks
	bg      background
}

// leases are the leases a Ledger's writes are made under, as it last
// read or granted them (guarded by Ledger.mu).
type leases struct {
	self    clientv3.LeaseID // the lease of this host's member key, as last read
	shared  clientv3.LeaseID // the lease new records take (recordLease)
	grantAt time.Time        // when shared was granted
}

// background is the work a Ledger does behind its callers' backs, its
// loop and its writes in flight, and their end: Close stops the loop and
// waits for both.
type background struct {
	wg      sync.WaitGroup // writes in flight
	quit    chan struct{}  // closed by stop
	done    chan struct{}  // the loop returned
	closing sync.Once
}

// goWrite runs a write in flight (stop waits for it).
func (b *background) goWrite(write func()) { b.wg.Go(write) }

// stop ends the loop, once, and waits for it and the writes in flight.
func (b *background) stop() {
	b.closing.Do(func() { close(b.quit) })
	<-b.done
	b.wg.Wait()
}

var _ message.Ledger = (*Ledger)(nil)

// New is a ledger; its loop (renewals, retried writes) runs until Close or
// until the client is closed.
func New(o Options) *Ledger {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxReply <= 0 {
		o.MaxReply = DefaultMaxReply
	}
	if o.TTL <= 0 {
		o.TTL = message.DefaultRetention
	}
	o.TTL = max(o.TTL, time.Second)
	log := o.Log
	if log == nil {
		log = zap.NewNop()
	}
	l := &Ledger{o: o, cli: o.Client, log: log.Named("idempotency"),
		open: map[*claim]bool{}, pending: map[*claim]bool{}, changed: make(chan struct{}),
		bg: background{quit: make(chan struct{}), done: make(chan struct{})}}
	go l.loop()
	return l
}

// Close stops the loop and waits for the writes in flight.
func (l *Ledger) Close() { l.bg.stop() }

func (l *Ledger) key(agent, key string) string {
	sum := sha256.Sum256([]byte(key))
	return l.o.Prefix + "/idempotency/" + agent + "/" + hex.EncodeToString(sum[:])
}

func (l *Ledger) memberKey(host string) string { return l.o.Prefix + "/members/" + host }

// Claim implements message.Ledger.
func (l *Ledger) Claim(ctx context.Context, agent, key, id string, durable bool) (message.Claim, *message.Prior, error) {
	ctx, cancel := context.WithTimeout(ctx, l.o.Timeout)
	defer cancel()
	k := l.key(agent, key)
	for range 4 {
		self, err := l.selfLease(ctx)
		if err != nil {
			return nil, nil, err
		}
		mk := l.memberKey(l.o.Host)
		c, resp, err := l.put(ctx, k, id, self, clientv3.Compare(clientv3.CreateRevision(k), "=", 0), clientv3.OpGet(k), clientv3.OpGet(mk))
		switch {
		case err != nil:
			return nil, nil, err
		case c != nil:
			return c, nil, nil
		case resp == nil: // the shared lease was gone
			continue
		}
		kvs, members := resp.Responses[0].GetResponseRange().Kvs, resp.Responses[1].GetResponseRange().Kvs
		if len(kvs) == 0 { // this host's member key is not on the lease it had
			l.setSelf(members)
			continue
		}
		prior, again, err := l.prior(ctx, k, kvs[0].Value, kvs[0].ModRevision, clientv3.LeaseID(kvs[0].Lease), durable)
		if err != nil || !again {
			return nil, prior, err
		}
	}
	return nil, nil, fmt.Errorf("the record of the key changed under four attempts: %w", ErrContended)
}

// put writes the record claiming k for message id on this host, whose
// member key is on lease self, if cmp holds too. It returns the open claim,
// or (the transaction failed) the response, whose Else is els; neither
// when the shared lease was gone (claim again).
func (l *Ledger) put(ctx context.Context, k, id string, self clientv3.LeaseID, cmp clientv3.Cmp, els ...clientv3.Op) (*claim, *clientv3.TxnResponse, error) {
	lease, err := l.recordLease(ctx)
	if err != nil {
		return nil, nil, err
	}
	rec := record{State: stateClaimed, Host: l.o.Host, HostLease: int64(self), Message: id, Claimed: time.Now()}
	val, err := json.Marshal(rec)
	if err != nil {
		return nil, nil, err
	}
	resp, err := l.cli.Txn(ctx).
		If(cmp, clientv3.Compare(clientv3.LeaseValue(l.memberKey(l.o.Host)), "=", int64(self))).
		Then(clientv3.OpPut(k, string(val), clientv3.WithLease(lease))).
		Else(els...).
		Commit()
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		l.dropLease(lease)
		return nil, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("etcd: %w", err)
	case !resp.Succeeded:
		return nil, resp, nil
	}
	c := &claim{l: l, key: k, lease: lease, rev: resp.Header.Revision, rec: rec, renewed: time.Now()}
	l.mu.Lock()
	l.open[c] = true
	l.mu.Unlock()
	return c, nil, nil
}

// selfLease is the lease of this host's member key (read once, and again
// after a claim found it changed).
func (l *Ledger) selfLease(ctx context.Context) (clientv3.LeaseID, error) {
	l.mu.Lock()
	self := l.leases.self
	l.mu.Unlock()
	if self != 0 {
		return self, nil
	}
	resp, err := l.cli.Get(ctx, l.memberKey(l.o.Host))
	if err != nil {
		return 0, fmt.Errorf("etcd: %w", err)
	}
	if self = l.setSelf(resp.Kvs); self == 0 {
		return 0, fmt.Errorf("host %q: %w", l.o.Host, ErrNotMember)
	}
	return self, nil
}

// setSelf keeps the lease of this host's member key, as read (none: 0).
func (l *Ledger) setSelf(kvs []*mvccpb.KeyValue) clientv3.LeaseID {
	var self clientv3.LeaseID
	if len(kvs) > 0 {
		self = clientv3.LeaseID(kvs[0].Lease)
	}
	l.mu.Lock()
	l.leases.self = self
	l.mu.Unlock()
	return self
}

// prior reads a record that holds the key: ended, or claimed by a live
// member, it is the prior message; claimed by a host that is no longer
// the member it claimed as, it becomes ended with the unknown-outcome
// error first, unless the agent is durable (its next host resumes the
// message and claims the record again: it stays in flight, Stopped).
// again: the record changed meanwhile, claim again.
func (l *Ledger) prior(ctx context.Context, k string, val []byte, rev int64, lease clientv3.LeaseID, durable bool) (p *message.Prior, again bool, err error) {
	var rec record
	if err := json.Unmarshal(val, &rec); err != nil {
		return nil, false, fmt.Errorf("record %s: %w", k, err)
	}
	p = &message.Prior{ID: rec.Message, Host: rec.Host}
	if rec.State == stateEnded && rec.Outcome != nil {
		p.Ended, p.Outcome = true, *rec.Outcome
		return p, false, nil
	}
	resp, err := l.cli.Get(ctx, l.memberKey(rec.Host))
	if err != nil {
		return nil, false, fmt.Errorf("etcd: %w", err)
	}
	if len(resp.Kvs) > 0 && resp.Kvs[0].Lease == rec.HostLease {
		return p, false, nil // in flight on a live member
	}
	if durable {
		p.Stopped = true
		return p, false, nil
	}
	ev := message.Event{Kind: message.KindError, Code: tooling.CodeUnavailable.String(),
		Text: fmt.Sprintf("message %s was delivered to host %q, which stopped before the reply completed; its outcome is unknown", rec.Message, rec.Host)}
	rec.State, rec.Ended, rec.Outcome, rec.Lost = stateEnded, time.Now(), &ev, true
	nv, err := json.Marshal(rec)
	if err != nil {
		return nil, false, err
	}
	tr, err := l.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(k), "=", rev)).
		Then(clientv3.OpPut(k, string(nv), clientv3.WithIgnoreLease())).
		Commit()
	if err != nil {
		return nil, false, fmt.Errorf("etcd: %w", err)
	}
	if !tr.Succeeded {
		return nil, true, nil
	}
	l.log.Info("idempotency key of a lost message settled", zap.String("message_id", rec.Message), zap.String("host", rec.Host))
	_, _ = l.cli.KeepAliveOnce(ctx, lease) // kept the retention from now
	p.Ended, p.Outcome = true, ev
	return p, false, nil
}

// Flush implements message.Ledger.
func (l *Ledger) Flush(ctx context.Context) error {
	for {
		l.mu.Lock()
		n, changed := len(l.pending), l.changed
		l.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("idempotency ledger: %d records not written: %w", n, ctx.Err())
		}
	}
}

// settled forgets c's pending write.
func (l *Ledger) settled(c *claim) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending[c] {
		delete(l.pending, c)
		close(l.changed)
		l.changed = make(chan struct{})
	}
}
