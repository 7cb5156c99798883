package system_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/kv"
	"github.com/toolhostd/toolhostd/internal/system"
)

// TestStore: the system's key-value store is the state directory's bbolt
// file, kept across systems; WithTemporaryStore's is a file elsewhere that
// Close removes; a system without a host has none.
func TestStore(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg, err := config.Parse("test.toml", []byte(fmt.Sprintf("version = 1\n[host]\ncache_dir = %q\nstate_dir = %q\n", filepath.Join(dir, "cache"), state)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ref := kv.Ref{Agent: "a", Bucket: "notes"}
	open := func(opts system.Options) *system.System {
		t.Helper()
		sys, err := system.New(cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		return sys
	}

	obsFile, fileLogs := observer.New(zapcore.InfoLevel)
	sys, err := system.New(cfg, system.Options{Log: zap.New(obsFile)})
	if err != nil {
		t.Fatal(err)
	}
	// Where the keys are is said at start (serve's log).
	if said := fileLogs.FilterMessage("key-value store: a bbolt file").All(); len(said) != 1 ||
		said[0].ContextMap()["kv_file"] != filepath.Join(state, config.StoreFile) {
		t.Errorf("the log says of the store's file: %v, want one line with kv_file %s", said, filepath.Join(state, config.StoreFile))
	}
	if err := sys.KV.Put(ctx, ref, "k", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	if err := sys.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, config.StoreFile)); err != nil {
		t.Fatalf("the store's file: %v", err)
	}
	sys = open(system.Options{})
	if v, ok, err := sys.KV.Get(ctx, ref, "k"); err != nil || !ok || string(v) != "kept" {
		t.Errorf("the next system's store: %q %v %v, want what the first wrote", v, ok, err)
	}
	if err := sys.Close(); err != nil {
		t.Fatal(err)
	}

	obs, logs := observer.New(zapcore.InfoLevel)
	tmp, err := system.New(cfg, system.Options{Log: zap.New(obs), TemporaryStore: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := tmp.KV.Get(ctx, ref, "k"); err != nil || ok {
		t.Errorf("the temporary store holds the state directory's key: %v %v", ok, err)
	}
	if err := tmp.KV.Put(ctx, ref, "t", []byte("gone at exit")); err != nil {
		t.Fatal(err)
	}
	said := logs.FilterMessage("the key-value store is temporary: it is removed at exit").All()
	if len(said) != 1 {
		t.Fatalf("%d log lines about the temporary store, want 1", len(said))
	}
	path, _ := said[0].ContextMap()["path"].(string)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the temporary store %q: %v", path, err)
	}
	if rel, err := filepath.Rel(state, path); err == nil && filepath.IsLocal(rel) {
		t.Fatalf("the temporary store %q is in the state directory %q", path, state)
	}
	if err := tmp.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Errorf("the temporary store's directory after Close: %v, want it removed", err)
	}

	if bare := open(system.Options{NoHost: true}); bare.KV != nil {
		bare.Close()
		t.Error("a system without a host has a key-value store")
	} else {
		bare.Close()
	}
}
