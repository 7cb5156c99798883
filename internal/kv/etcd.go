package kv

// The etcd backend: the cluster's etcd under its own prefix.

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/url"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultEtcdPrefix is the etcd backend's default key prefix.
const DefaultEtcdPrefix = "/toolhostd/kv"

// Etcd is a Store in etcd: PREFIX/d/AGENT/BUCKET/KEY = value (agent and
// bucket path-escaped) and PREFIX/u/AGENT = the agent's usage. A write is
// a transaction that also updates the usage, retried while another writer
// of the agent wins the race; a read is linearizable.
type Etcd struct {
	cli     *clientv3.Client
	prefix  string
	timeout time.Duration
}

// EtcdOptions configure NewEtcd.
type EtcdOptions struct {
	// Prefix is the keys' prefix, without a trailing / (DefaultEtcdPrefix).
	Prefix string
	// Timeout bounds each operation, so that an unreachable etcd is an
	// error rather than a hang (default 5s).
	Timeout time.Duration
}

// NewEtcd is a store on cli, which the caller keeps and closes.
func NewEtcd(cli *clientv3.Client, o EtcdOptions) *Etcd {
	if o.Prefix == "" {
		o.Prefix = DefaultEtcdPrefix
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	return &Etcd{cli: cli, prefix: strings.TrimSuffix(o.Prefix, "/"), timeout: o.Timeout}
}

// Close does nothing: the client is the caller's.
func (s *Etcd) Close() error { return nil }

func (s *Etcd) agentDir(agent string) string {
	return s.prefix + "/d/" + url.PathEscape(agent) + "/"
}
func (s *Etcd) bucketDir(b Ref) string       { return s.agentDir(b.Agent) + url.PathEscape(b.Bucket) + "/" }
func (s *Etcd) usageKey(agent string) string { return s.prefix + "/u/" + url.PathEscape(agent) }

// call runs f with the operation's timeout and names the backend in an
// error.
func (s *Etcd) call(ctx context.Context, what string, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := f(ctx); err != nil {
		return fmt.Errorf("etcd %s: %w", what, err)
	}
	return nil
}

func (s *Etcd) Get(ctx context.Context, b Ref, key string) ([]byte, bool, error) {
	var v []byte
	var ok bool
	err := s.call(ctx, "get", func(ctx context.Context) error {
		r, err := s.cli.Get(ctx, s.bucketDir(b)+key)
		if err != nil {
			return err
		}
		if len(r.Kvs) == 1 {
			v, ok = nonNil(r.Kvs[0].Value), true
		}
		return nil
	})
	return v, ok, err
}

func (s *Etcd) Update(ctx context.Context, b Ref, key string, q Quota, fn UpdateFunc) ([]byte, error) {
	k, uk := s.bucketDir(b)+key, s.usageKey(b.Agent)
	// refused is fn's error, a quota's or the size limit's: the guest's
	// message as it is, not wrapped as an etcd failure.
	var out []byte
	var refused error
	err := s.call(ctx, "write", func(ctx context.Context) error {
		for {
			r, err := s.cli.Txn(ctx).Then(clientv3.OpGet(k), clientv3.OpGet(uk)).Commit()
			if err != nil {
				return err
			}
			cur, u, urev := Version{}, Usage{}, int64(0)
			if kvs := r.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
				cur = Version{Value: nonNil(kvs[0].Value), Present: true, Rev: kvs[0].ModRevision}
			}
			if kvs := r.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
				u, urev = decodeUsage(kvs[0].Value), kvs[0].ModRevision
			}
			value, keep, err := fn(cur)
			if err == nil && keep && len(value) > MaxEtcdValue {
				err = &TooLargeError{Size: len(value), Limit: MaxEtcdValue, Whose: "the etcd backend's"}
			}
			var nu Usage
			if err == nil {
				dk, db := delta(key, cur, value, keep)
				nu, err = checkQuota(b.Agent, u, dk, db, q)
			}
			if err != nil {
				refused = err
				return nil
			}
			ops := []clientv3.Op{clientv3.OpPut(uk, encodeUsage(nu))}
			if nu.Keys == 0 {
				ops[0] = clientv3.OpDelete(uk)
			}
			if keep {
				ops = append(ops, clientv3.OpPut(k, string(value)))
			} else {
				ops = append(ops, clientv3.OpDelete(k))
			}
			t, err := s.cli.Txn(ctx).If(
				clientv3.Compare(clientv3.ModRevision(k), "=", cur.Rev),
				clientv3.Compare(clientv3.ModRevision(uk), "=", urev),
			).Then(ops...).Commit()
			if err != nil {
				return err
			}
			if t.Succeeded {
				out = value
				return nil
			}
		}
	})
	if refused != nil {
		return nil, refused
	}
	return out, err
}

func (s *Etcd) List(ctx context.Context, b Ref, prefix, after string, limit int) ([]string, bool, error) {
	dir := s.bucketDir(b)
	from, end := dir+prefix, clientv3.GetPrefixRangeEnd(dir+prefix)
	if after != "" && after >= prefix {
		from = dir + after + "\x00"
	}
	var keys []string
	more := false
	err := s.call(ctx, "list", func(ctx context.Context) error {
		r, err := s.cli.Get(ctx, from, clientv3.WithRange(end), clientv3.WithKeysOnly(),
			clientv3.WithLimit(int64(limit)+1), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
		if err != nil {
			return err
		}
		for _, kv := range r.Kvs {
			if len(keys) == limit {
				more = true
				break
			}
			keys = append(keys, strings.TrimPrefix(string(kv.Key), dir))
		}
		return nil
	})
	return keys, more, err
}

// firstSegments lists the distinct first path segments (unescaped) of the
// keys under dir, one range read per segment.
func (s *Etcd) firstSegments(ctx context.Context, dir string) ([]string, error) {
	var out []string
	from, end := dir, clientv3.GetPrefixRangeEnd(dir)
	err := s.call(ctx, "list", func(ctx context.Context) error {
		for {
			r, err := s.cli.Get(ctx, from, clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(1))
			if err != nil {
				return err
			}
			if len(r.Kvs) == 0 {
				return nil
			}
			seg, _, _ := strings.Cut(strings.TrimPrefix(string(r.Kvs[0].Key), dir), "/")
			name, err := url.PathUnescape(seg)
			if err != nil {
				return err
			}
			out = append(out, name)
			from = clientv3.GetPrefixRangeEnd(dir + seg + "/")
		}
	})
	return out, err
}

func (s *Etcd) Buckets(ctx context.Context, agent string) ([]string, error) {
	return s.firstSegments(ctx, s.agentDir(agent))
}

func (s *Etcd) Agents(ctx context.Context) ([]string, error) {
	return s.firstSegments(ctx, s.prefix+"/d/")
}

func (s *Etcd) Usage(ctx context.Context, agent string) (Usage, error) {
	var u Usage
	err := s.call(ctx, "get", func(ctx context.Context) error {
		r, err := s.cli.Get(ctx, s.usageKey(agent))
		if err == nil && len(r.Kvs) == 1 {
			u = decodeUsage(r.Kvs[0].Value)
		}
		return err
	})
	return u, err
}

func encodeUsage(u Usage) string {
	v := make([]byte, 16)
	binary.BigEndian.PutUint64(v, uint64(u.Keys))
	binary.BigEndian.PutUint64(v[8:], uint64(u.Bytes))
	return string(v)
}

func decodeUsage(v []byte) Usage {
	if len(v) != 16 {
		return Usage{}
	}
	return Usage{Keys: int64(binary.BigEndian.Uint64(v)), Bytes: int64(binary.BigEndian.Uint64(v[8:]))}
}

// nonNil is v, or an empty value for etcd's nil (a present key's empty
// value).
func nonNil(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}
