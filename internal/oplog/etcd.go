package oplog

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// EtcdOptions configure OpenEtcd.
type EtcdOptions struct {
	// Client is the cluster's; Store.Close does not close it.
	Client *clientv3.Client
	// Prefix is where the store's logs are, e.g. "/toolhostd/oplog" (a
	// trailing slash is not needed). Nothing else may be under it, nor
	// another store's prefix.
	Prefix string
	// Log receives the store's messages; nil: none.
	Log *zap.Logger
	// MaxBatch bounds how many appends one batch of the committer takes
	// (0: 1024), as Options.MaxBatch; a batch is written in as many
	// transactions as etcd's limits require.
	MaxBatch int
	// Timeout bounds each etcd request (0: 5s).
	Timeout time.Duration
	// Guard, if set, returns etcd comparisons that every transaction
	// writing the log key must satisfy (the cluster passes "this host
	// still owns the agent": clientv3.Compare(clientv3.LeaseValue(ownerKey),
	// "=", lease)). A transaction whose guard fails writes nothing and its
	// requests fail with an error wrapping ErrFenced. It is called by the
	// committer, once per log per batch, and must not block.
	Guard func(logKey string) []clientv3.Cmp
}

const (
	defaultEtcdTimeout = 5 * time.Second
	// etcd's default limits: of the operations (and of the comparisons)
	// of a transaction (--max-txn-ops), and of the size of a request
	// (--max-request-bytes, 1.5 MiB).
	etcdMaxOps     = 128
	etcdMaxRequest = 3 << 19
	// etcdMaxTxnBytes bounds the keys and values a transaction of appends
	// puts, below etcdMaxRequest; a larger entry goes in one of its own.
	etcdMaxTxnBytes = 1 << 20
	// etcdMaxEntry bounds an entry: the request less room for its key and
	// the comparisons.
	etcdMaxEntry = etcdMaxRequest - 16<<10
	// etcdPage is how many keys one range request of a read returns.
	etcdPage = 512
)

// OpenEtcd opens the store of the logs under o.Prefix of etcd and starts
// its committer; Close stops it. It makes no request: an etcd that cannot
// be reached fails the store's requests, each within o.Timeout.
func OpenEtcd(o EtcdOptions) (*Store, error) {
	prefix := strings.TrimRight(o.Prefix, "/")
	name := "etcd:" + prefix
	switch {
	case o.Client == nil:
		return nil, fmt.Errorf("oplog: %s: no etcd client", name)
	case prefix == "":
		return nil, fmt.Errorf("oplog: %s: no prefix for the store", name)
	case o.MaxBatch < 0:
		return nil, fmt.Errorf("oplog: %s: max batch %d is negative", name, o.MaxBatch)
	case o.Timeout < 0:
		return nil, fmt.Errorf("oplog: %s: timeout %v is negative", name, o.Timeout)
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = defaultMaxBatch
	}
	if o.Timeout == 0 {
		o.Timeout = defaultEtcdTimeout
	}
	lg := o.Log
	if lg == nil {
		lg = zap.NewNop()
	}
	lg = lg.Named("oplog")
	b := &etcdBackend{cli: o.Client, prefix: prefix + "/", name: name, log: lg, timeout: o.Timeout, guard: o.Guard}
	return newStore(b, name, lg, o.MaxBatch, etcdMaxEntry, "etcd's request limit"), nil
}

// etcdBackend keeps the logs in etcd, under prefix: see the package doc.
type etcdBackend struct {
	cli     *clientv3.Client
	prefix  string // with its trailing slash
	name    string // "etcd:" and the prefix, for messages
	log     *zap.Logger
	timeout time.Duration
	guard   func(string) []clientv3.Cmp
}

func (b *etcdBackend) close() error { return nil }

// ctx is the context of one request.
func (b *etcdBackend) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), b.timeout)
}

// logPrefix is where log key is: PREFIX/<key, path-escaped>/.
func (b *etcdBackend) logPrefix(key string) string {
	return b.prefix + url.PathEscape(key) + "/"
}

// headerKey is the key of log key's header.
func (b *etcdBackend) headerKey(key string) string { return b.logPrefix(key) + "h" }

// entryKey is the key of log key's entry seq: its seq in 16 hex digits,
// which sort as the seqs do.
func (b *etcdBackend) entryKey(key string, seq uint64) string {
	return fmt.Sprintf("%se/%016x", b.logPrefix(key), seq)
}

// splitKey is the log (escaped) and the rest of key, a key of etcd under
// b.prefix; ok is false if key is not of a log.
func (b *etcdBackend) splitKey(key string) (log, rest string, ok bool) {
	k, ok := strings.CutPrefix(key, b.prefix)
	if !ok {
		return "", "", false
	}
	return strings.Cut(k, "/")
}

// scan calls fn with each key (and value, unless keysOnly) under prefix,
// in key order, page by page, all at the revision of the first page.
func (b *etcdBackend) scan(prefix string, keysOnly bool, fn func(kv *mvccpb.KeyValue)) error {
	from, end := prefix, clientv3.GetPrefixRangeEnd(prefix)
	var rev int64
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(etcdPage)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		if keysOnly {
			opts = append(opts, clientv3.WithKeysOnly())
		}
		ctx, cancel := b.ctx()
		resp, err := b.cli.Get(ctx, from, opts...)
		cancel()
		if err != nil {
			return b.wrap(err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			fn(kv)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// read reads the log key at one revision and verifies it as bbolt's is:
// the header first, then the entries in key order.
func (b *etcdBackend) read(key string) (*stored, error) {
	lp := b.logPrefix(key)
	var header []byte
	var entries []*mvccpb.KeyValue
	var other []string // keys of the log that are no header's or entry's
	n := 0
	err := b.scan(lp, false, func(kv *mvccpb.KeyValue) {
		n++
		switch rest := string(kv.Key[len(lp):]); {
		case rest == "h":
			header = kv.Value
		case strings.HasPrefix(rest, "e/"):
			entries = append(entries, kv)
		default:
			other = append(other, rest)
		}
	})
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	v, err := newVerifier(header)
	if err != nil {
		return nil, err
	}
	for _, kv := range entries {
		hex := string(kv.Key[len(lp)+len("e/"):])
		seq, err := strconv.ParseUint(hex, 16, 64)
		if err != nil || fmt.Sprintf("%016x", seq) != hex {
			return nil, v.badKey(fmt.Sprintf("a key %q where the entry should be", kv.Key[len(lp):]))
		}
		if err := v.next(seq); err != nil {
			return nil, err
		}
		if err := v.add(seq, kv.Value); err != nil {
			return nil, err
		}
	}
	if len(other) > 0 {
		return nil, fmt.Errorf("%w: a key %q that is no header's or entry's", ErrCorrupt, other[0])
	}
	return v.st, nil
}

// logKey is the log key of esc, escaped; ok is false (and the key logged)
// if esc is no escaped key.
func (b *etcdBackend) logKey(esc string) (string, bool) {
	key, err := url.PathUnescape(esc)
	if err == nil {
		err = checkKey(key)
	}
	if err != nil {
		b.log.Warn("not a log's key under the prefix", zap.String("file", b.name), zap.String("key", esc), zap.Error(err))
		return "", false
	}
	return key, true
}

func (b *etcdBackend) keys() ([]string, error) {
	var keys []string
	last := ""
	err := b.scan(b.prefix, true, func(kv *mvccpb.KeyValue) {
		esc, _, ok := b.splitKey(string(kv.Key))
		if !ok || esc == last {
			return
		}
		last = esc
		if key, ok := b.logKey(esc); ok {
			keys = append(keys, key)
		}
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(keys) // escaping changes the order
	return slices.Compact(keys), nil
}

func (b *etcdBackend) summaries() ([]Summary, error) {
	var sums []Summary
	last := ""
	var sum *Summary // of last; nil if it is no log
	err := b.scan(b.prefix, false, func(kv *mvccpb.KeyValue) {
		esc, rest, ok := b.splitKey(string(kv.Key))
		if !ok {
			return
		}
		if esc != last {
			last, sum = esc, nil
			if key, ok := b.logKey(esc); ok {
				sums = append(sums, Summary{Key: key})
				sum = &sums[len(sums)-1]
			}
		}
		switch {
		case sum == nil:
		case rest == "h":
			h, err := decodeHeader(kv.Value)
			if err != nil {
				b.log.Warn("corrupt log header", zap.String("file", b.name), zap.String("key", sum.Key), zap.Error(err))
			}
			sum.Header = h
		case strings.HasPrefix(rest, "e/"):
			sum.Entries++
			sum.Bytes += int64(len(kv.Value))
		}
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(sums, func(a, b Summary) int { return strings.Compare(a.Key, b.Key) })
	return sums, nil
}

// wrap is an error of an etcd request, saying so (and the timeout, if
// that is what it is).
func (b *etcdBackend) wrap(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("etcd did not answer within %v: %w", b.timeout, err)
	}
	return fmt.Errorf("etcd: %w", err)
}

// errGuardFailed is the error of a request whose guard failed.
var errGuardFailed = fmt.Errorf("%w: the transaction's guard failed (this host may no longer own the log)", ErrFenced)

// errLogMissing is the error of an append to a log etcd does not hold.
var errLogMissing = errors.New("the log is not in etcd")
