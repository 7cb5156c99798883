package kv_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/kv"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestConcurrentIncrements: increments and compare-and-swap loops from
// several goroutines on two handles (two Services on one bbolt file; two
// etcd clients, as two hosts) sum exactly.
func TestConcurrentIncrements(t *testing.T) {
	const workers, each = 8, 25
	c := etcdtest.Start(t, 1)
	bolt, err := kv.OpenBolt(filepath.Join(t.TempDir(), "kv.db"), kv.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer bolt.Close()
	pairs := map[string][2]kv.Store{
		"bbolt": {bolt, bolt},
		"etcd": {
			kv.NewEtcd(etcdtest.Client(t, c.Endpoints()...), kv.EtcdOptions{}),
			kv.NewEtcd(etcdtest.Client(t, c.Endpoints()...), kv.EtcdOptions{}),
		},
	}
	for name, stores := range pairs {
		t.Run(name, func(t *testing.T) {
			cx := ctx(t)
			handles := []*kv.Bucket{
				open(t, kv.New(stores[0], kv.Options{}), "a", "", kv.Policy{}, "default"),
				open(t, kv.New(stores[1], kv.Options{}), "a", "", kv.Policy{}, "default"),
			}
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for i := range workers {
				b := handles[i%2]
				wg.Go(func() {
					for range each {
						if _, err := b.Increment(cx, "n", 1); err != nil {
							errs <- err
							return
						}
						if err := casAppend(cx, b, "log"); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			n, err := handles[0].Increment(cx, "n", 0)
			if err != nil || n != workers*each {
				t.Errorf("sum of increments = %d, %v; want %d", n, err, workers*each)
			}
			v, _, err := handles[1].Get(cx, "log")
			if err != nil || len(v) != workers*each {
				t.Errorf("compare-and-swap appends kept %d bytes, %v; want %d", len(v), err, workers*each)
			}
		})
	}
}

// casAppend appends a byte to key with a compare-and-swap loop.
func casAppend(cx context.Context, b *kv.Bucket, key string) error {
	cas, err := b.NewCAS(cx, key)
	for err == nil {
		v, _ := cas.Current()
		cas, err = cas.Swap(cx, append(bytes.Clone(v), 'x'))
		if err == nil {
			return nil
		}
		if errors.Is(err, kv.ErrCASFailed) {
			err = nil
		}
	}
	return err
}

// TestEtcdLimits: a value over 1 MiB is refused naming the limit, and an
// unreachable etcd is an error within the operation's bound.
func TestEtcdLimits(t *testing.T) {
	c := etcdtest.Start(t, 1)
	proxy := etcdtest.NewProxy(t, c.Endpoint(0))
	st := kv.NewEtcd(etcdtest.Client(t, proxy.URL()), kv.EtcdOptions{Timeout: time.Second})
	b := open(t, kv.New(st, kv.Options{}), "a", "", kv.Policy{}, "default")
	cx := ctx(t)
	if err := b.Set(cx, "big", make([]byte, kv.MaxEtcdValue)); err != nil {
		t.Fatalf("a value of exactly 1 MiB: %v", err)
	}
	err := b.Set(cx, "big", make([]byte, kv.MaxEtcdValue+1))
	if err == nil || !strings.Contains(err.Error(), "limit is 1048576 bytes (1 MiB)") || kv.KindOf(err) != kv.KindOther {
		t.Fatalf("a value over 1 MiB: %v", err)
	}
	if v, _, _ := b.Get(cx, "big"); len(v) != kv.MaxEtcdValue {
		t.Errorf("the refused write changed the value (%d bytes)", len(v))
	}

	proxy.Cut()
	for _, op := range []struct {
		name string
		do   func() error
	}{
		{"get", func() error { _, _, err := b.Get(cx, "k"); return err }},
		{"set", func() error { return b.Set(cx, "k", []byte("v")) }},
		{"increment", func() error { _, err := b.Increment(cx, "n", 1); return err }},
	} {
		start := time.Now()
		err := op.do()
		if took := time.Since(start); err == nil || took > 5*time.Second || !strings.Contains(err.Error(), "etcd") {
			t.Errorf("%s with etcd unreachable: %v after %v; want an etcd error within the 1s bound", op.name, err, took)
		}
	}
	proxy.Restore()
	testenv.Eventually(t, 20*time.Second, "the store answers after etcd is reachable again", func() bool {
		return b.Set(cx, "k", []byte("v")) == nil
	})
}

// TestBoltOpenFaults: a locked or corrupt file is an error naming the
// file and what to do.
func TestBoltOpenFaults(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kv.db")
	st, err := kv.OpenBolt(path, kv.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = kv.OpenBolt(path, kv.BoltOptions{LockTimeout: 50 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "locked by another process") {
		t.Errorf("opening a locked file: %v", err)
	}
	st.Close()

	bad := filepath.Join(dir, "bad.db")
	if err := os.WriteFile(bad, bytes.Repeat([]byte("not a database "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = kv.OpenBolt(bad, kv.BoltOptions{})
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), "kv import") {
		t.Errorf("opening a corrupt file: %v", err)
	}
}
