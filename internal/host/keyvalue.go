package host

// The key-value store: wasi:keyvalue/store, atomics and batch at
// 0.2.0-draft2 (wit/deps/keyvalue), one to one onto the agent's buckets
// (package kv, bound to the agent by AgentConfig.OpenBucket). Every call
// runs within the kv.Service's own timeout and until the agent's hard
// stop: unlike a tooling call, a store call still works after the agent
// was asked to stop, so that it can keep its state in its stop grace; one
// still pending when the grace ends (an unreachable etcd) ends then.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/toolhostd/toolhostd/internal/kv"
	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// The interfaces' names, as a component imports them.
const (
	kvStore   = "wasi:keyvalue/store@0.2.0-draft2"
	kvAtomics = "wasi:keyvalue/atomics@0.2.0-draft2"
	kvBatch   = "wasi:keyvalue/batch@0.2.0-draft2"
)

// The host resource types of the store's handles.
const (
	bucketType uint32 = 3
	casType    uint32 = 4
)

// errNoStore is open's error in an agent without a store
// (AgentConfig.OpenBucket nil): other, since no identifier would do.
var errNoStore = errors.New("this host has no key-value store")

// kvError is wasi:keyvalue's error variant for err (kv.KindOf).
func kvError(err error) wt.Val {
	switch kv.KindOf(err) {
	case kv.KindNoSuchStore:
		return wt.Variant{Case: "no-such-store"}
	case kv.KindAccessDenied:
		return wt.Variant{Case: "access-denied"}
	}
	return wt.Variant{Case: "other", Payload: wt.String(err.Error())}
}

// kvResult is a result<T, error>: ok(v) when err is nil.
func kvResult(v wt.Val, err error) wt.Val {
	if err != nil {
		return wt.Err(kvError(err))
	}
	return wt.Ok(v)
}

// bytesVal is a list<u8>, lowered by the binding in one pass.
func bytesVal(b []byte) wt.Val { return wt.Bytes(b) }

// bytesArg lifts a list<u8> argument.
func bytesArg(v wt.Val, what string) ([]byte, error) {
	l, ok := v.(wt.List)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a list<u8>", errBadArgs, what)
	}
	b := make([]byte, len(l))
	for i, e := range l {
		c, ok := e.(wt.U8)
		if !ok {
			return nil, fmt.Errorf("%w: %s[%d] is not a u8", errBadArgs, what, i)
		}
		b[i] = byte(c)
	}
	return b, nil
}

// optBytes is an option<list<u8>>.
func optBytes(b []byte, ok bool) wt.Val {
	if !ok {
		return wt.None
	}
	return wt.Some(bytesVal(b))
}

// stringsArg lifts a list<string> argument.
func stringsArg(v wt.Val, what string) ([]string, error) {
	l, ok := v.(wt.List)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a list<string>", errBadArgs, what)
	}
	out := make([]string, len(l))
	for i, e := range l {
		s, ok := e.(wt.String)
		if !ok {
			return nil, fmt.Errorf("%w: %s[%d] is not a string", errBadArgs, what, i)
		}
		out[i] = string(s)
	}
	return out, nil
}

// argCount checks that a function got n arguments (self included).
func argCount(args []wt.Val, n int, fn string) error {
	if len(args) != n {
		return fmt.Errorf("%w: %s takes %d arguments, got %d", errBadArgs, fn, n, len(args))
	}
	return nil
}

// bucketFunc adapts a function whose first argument is a borrow<bucket>
// (the bucket's methods, increment, cas.new, the batch functions) to a
// HostFunc; body gets the other arguments and the context of the call
// (the agent's, until its hard stop).
func bucketFunc(fn string, n int, body func(ctx context.Context, st *agentState, b *kv.Bucket, args []wt.Val) (wt.Val, error)) wt.HostFunc {
	span := "kv " + strings.TrimPrefix(fn, "bucket.") // kv get, kv increment, kv get-many
	return methodOf(func(st *agentState, args []wt.Val) (*kv.Bucket, error) {
		if err := argCount(args, n, fn); err != nil {
			return nil, err
		}
		return selfArg(st.kv.buckets, bucketType, "bucket", args)
	}, func(st *agentState, b *kv.Bucket, args []wt.Val) (wt.Val, error) {
		end := st.pa.Work(span, attrBucket.String(b.Ref().Bucket))
		v, err := body(st.killed, st, b, args)
		end(err)
		return v, err
	})
}

// attrBucket names the bucket of a key-value operation's span.
const attrBucket = attribute.Key("toolhost.kv.bucket")

// keyFunc is a bucketFunc of (bucket, key).
func keyFunc(fn string, body func(ctx context.Context, st *agentState, b *kv.Bucket, key string) wt.Val) wt.HostFunc {
	return bucketFunc(fn, 2, func(ctx context.Context, st *agentState, b *kv.Bucket, args []wt.Val) (wt.Val, error) {
		key, err := argString(args, 0)
		if err != nil {
			return nil, err
		}
		return body(ctx, st, b, key), nil
	})
}

// dropFrom is the destructor of a resource kept in the table m picks.
func dropFrom[H any](m func(st *agentState) map[uint32]H) wt.ResourceDtor {
	return func(c *wt.Caller, rep uint32) error {
		delete(m(stateOf(c)), rep)
		return nil
	}
}

// defineKeyValue puts wasi:keyvalue's store, atomics and batch into root.
func defineKeyValue(root *wt.LinkerInstance) error {
	for _, f := range []func(*wt.LinkerInstance) error{defineKVStore, defineKVAtomics, defineKVBatch} {
		if err := f(root); err != nil {
			return err
		}
	}
	return nil
}

func defineKVStore(root *wt.LinkerInstance) error {
	li, err := root.Instance(kvStore)
	if err != nil {
		return err
	}
	if err := li.AddResource("bucket", bucketType, dropFrom(func(st *agentState) map[uint32]*kv.Bucket { return st.kv.buckets })); err != nil {
		return err
	}
	return addFuncs(li, map[string]wt.HostFunc{
		"open": func(c *wt.Caller, args []wt.Val, results []wt.Val) error {
			st := stateOf(c)
			id, err := argString(args, 0)
			if err != nil {
				return err
			}
			if st.kv.open == nil {
				results[0] = kvResult(nil, errNoStore)
				return nil
			}
			b, err := st.kv.open(id)
			if err != nil {
				results[0] = kvResult(nil, err)
				return nil
			}
			results[0] = wt.Ok(keep(st, st.kv.buckets, bucketType, b))
			return nil
		},
		"[method]bucket.get": keyFunc("bucket.get", func(ctx context.Context, _ *agentState, b *kv.Bucket, key string) wt.Val {
			v, ok, err := b.Get(ctx, key)
			return kvResult(optBytes(v, ok), err)
		}),
		"[method]bucket.set": bucketFunc("bucket.set", 3, func(ctx context.Context, _ *agentState, b *kv.Bucket, args []wt.Val) (wt.Val, error) {
			key, err := argString(args, 0)
			if err != nil {
				return nil, err
			}
			v, err := bytesArg(args[1], "value")
			if err != nil {
				return nil, err
			}
			return kvResult(nil, b.Set(ctx, key, v)), nil
		}),
		"[method]bucket.delete": keyFunc("bucket.delete", func(ctx context.Context, _ *agentState, b *kv.Bucket, key string) wt.Val {
			return kvResult(nil, b.Delete(ctx, key))
		}),
		"[method]bucket.exists": keyFunc("bucket.exists", func(ctx context.Context, _ *agentState, b *kv.Bucket, key string) wt.Val {
			ok, err := b.Exists(ctx, key)
			return kvResult(wt.Bool(ok), err)
		}),
		"[method]bucket.list-keys": bucketFunc("bucket.list-keys", 2, func(ctx context.Context, _ *agentState, b *kv.Bucket, args []wt.Val) (wt.Val, error) {
			opt, ok := args[0].(wt.Option)
			if !ok {
				return nil, fmt.Errorf("%w: list-keys's cursor is not an option", errBadArgs)
			}
			var cursor string
			if opt.Some != nil {
				s, ok := opt.Some.(wt.String)
				if !ok {
					return nil, fmt.Errorf("%w: list-keys's cursor is not a string", errBadArgs)
				}
				cursor = string(s)
			}
			keys, next, err := b.ListKeys(ctx, cursor)
			if err != nil {
				return kvResult(nil, err), nil
			}
			l := make(wt.List, len(keys))
			for i, k := range keys {
				l[i] = wt.String(k)
			}
			var nextVal wt.Val = wt.None
			if next != "" {
				nextVal = wt.Some(wt.String(next))
			}
			return wt.Ok(wt.Record{{Name: "keys", Val: l}, {Name: "cursor", Val: nextVal}}), nil
		}),
	})
}

func defineKVAtomics(root *wt.LinkerInstance) error {
	li, err := root.Instance(kvAtomics)
	if err != nil {
		return err
	}
	if err := li.AddResource("cas", casType, dropFrom(func(st *agentState) map[uint32]*kv.CAS { return st.kv.cases })); err != nil {
		return err
	}
	return addFuncs(li, map[string]wt.HostFunc{
		"[static]cas.new": keyFunc("cas.new", func(ctx context.Context, st *agentState, b *kv.Bucket, key string) wt.Val {
			c, err := b.NewCAS(ctx, key)
			if err != nil {
				return kvResult(nil, err)
			}
			return wt.Ok(keep(st, st.kv.cases, casType, c))
		}),
		"[method]cas.current": methodOf(func(st *agentState, args []wt.Val) (*kv.CAS, error) {
			return selfArg(st.kv.cases, casType, "cas", args)
		}, func(_ *agentState, c *kv.CAS, _ []wt.Val) (wt.Val, error) {
			return wt.Ok(optBytes(c.Current())), nil
		}),
		"increment": bucketFunc("increment", 3, func(ctx context.Context, _ *agentState, b *kv.Bucket, args []wt.Val) (wt.Val, error) {
			key, err := argString(args, 0)
			if err != nil {
				return nil, err
			}
			delta, ok := args[1].(wt.S64)
			if !ok {
				return nil, fmt.Errorf("%w: increment's delta is not an s64", errBadArgs)
			}
			n, err := b.Increment(ctx, key, int64(delta))
			return kvResult(wt.S64(n), err), nil
		}),
		// swap takes the cas (own<cas>): it leaves the guest's table
		// whatever the outcome; cas-failed hands a fresh one back.
		"swap": func(c *wt.Caller, args []wt.Val, results []wt.Val) error {
			if err := argCount(args, 2, "swap"); err != nil {
				return err
			}
			st := stateOf(c)
			cas, err := selfArg(st.kv.cases, casType, "cas", args)
			if err != nil {
				return err
			}
			delete(st.kv.cases, args[0].(wt.ResourceHost).Rep)
			v, err := bytesArg(args[1], "value")
			if err != nil {
				return err
			}
			again, err := cas.Swap(st.killed, v)
			switch {
			case err == nil:
				results[0] = wt.Ok(nil)
			case again != nil:
				results[0] = wt.Err(wt.Variant{Case: "cas-failed", Payload: keep(st, st.kv.cases, casType, again)})
			default:
				results[0] = wt.Err(wt.Variant{Case: "store-error", Payload: kvError(err)})
			}
			return nil
		},
	})
}

func defineKVBatch(root *wt.LinkerInstance) error {
	li, err := root.Instance(kvBatch)
	if err != nil {
		return err
	}
	return addFuncs(li, map[string]wt.HostFunc{
		"get-many": bucketFunc("get-many", 2, func(ctx context.Context, _ *agentState, b *kv.Bucket, args []wt.Val) (wt.Val, error) {
			keys, err := stringsArg(args[0], "keys")
			if err != nil {
				return nil, err
			}
			vals, err := b.GetMany(ctx, keys)
			if err != nil {
				return kvResult(nil, err), nil
			}
			l := make(wt.List, len(keys))
			for i, v := range vals {
				l[i] = wt.None
				if v != nil {
					l[i] = wt.Some(wt.Tuple{wt.String(keys[i]), bytesVal(v)})
				}
			}
			return wt.Ok(l), nil
		}),
		"set-many": bucketFunc("set-many", 2, func(ctx context.Context, _ *agentState, b *kv.Bucket, args []wt.Val) (wt.Val, error) {
			l, ok := args[0].(wt.List)
			if !ok {
				return nil, fmt.Errorf("%w: set-many's key-values are not a list", errBadArgs)
			}
			kvs := make([]kv.KV, len(l))
			for i, e := range l {
				t, ok := e.(wt.Tuple)
				if !ok || len(t) != 2 {
					return nil, fmt.Errorf("%w: set-many's key-values[%d] is not a tuple<string, list<u8>>", errBadArgs, i)
				}
				k, err := argString(t, 0)
				if err != nil {
					return nil, err
				}
				v, err := bytesArg(t[1], "value")
				if err != nil {
					return nil, err
				}
				kvs[i] = kv.KV{Key: k, Value: v}
			}
			return kvResult(nil, b.SetMany(ctx, kvs)), nil
		}),
		"delete-many": bucketFunc("delete-many", 2, func(ctx context.Context, _ *agentState, b *kv.Bucket, args []wt.Val) (wt.Val, error) {
			keys, err := stringsArg(args[0], "keys")
			if err != nil {
				return nil, err
			}
			return kvResult(nil, b.DeleteMany(ctx, keys)), nil
		}),
	})
}
