package kv_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/kv"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashEnv) != "" {
		crashWriter() // the crash test's subprocess: never returns
	}
	goleak.VerifyTestMain(m, etcdtest.LeakOptions()...)
}

// backend makes fresh, empty stores of one kind.
type backend struct {
	name string
	open func(t *testing.T) kv.Store
}

var prefixes atomic.Int64

// backends are both backends: bbolt files in t.TempDir(), and one embedded
// etcd member with a fresh prefix per store.
func backends(t *testing.T) []backend {
	t.Helper()
	c := etcdtest.Start(t, 1)
	cli := etcdtest.Client(t, c.Endpoints()...)
	return []backend{
		{"bbolt", boltStore},
		{"etcd", func(t *testing.T) kv.Store {
			return kv.NewEtcd(cli, kv.EtcdOptions{Prefix: fmt.Sprintf("/test%d/kv", prefixes.Add(1))})
		}},
	}
}

// boltStore is a fresh bbolt store in t.TempDir(), closed at cleanup.
func boltStore(t *testing.T) kv.Store {
	t.Helper()
	s, err := kv.OpenBolt(filepath.Join(t.TempDir(), "kv.db"), kv.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// open opens identifier for agent with policy p, failing the test on an
// error.
func open(t *testing.T, s *kv.Service, agent, session string, p kv.Policy, id string) *kv.Bucket {
	t.Helper()
	b, err := s.Open(agent, session, p, id)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}
