package wasmtime

import "testing"

// TestPooling: an engine with the pooling allocator instantiates and runs
// components, and refuses an instance beyond its pool until one is freed.
func TestPooling(t *testing.T) {
	e := mustEngine(t, EngineConfig{Pooling: &PoolingConfig{ComponentInstances: 1, CoreInstances: 4, Memories: 2, Tables: 2, MaxMemorySize: 1 << 20}})
	c := mustComponent(t, e, echoWAT(prim("string")))
	l := mustLinker(t, e)
	if err := l.Root().AddFunc("echo", func(_ *Caller, args, results []Val) error {
		results[0] = args[0]
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	run := func(s *Store) error {
		inst, err := l.Instantiate(s, c)
		if err != nil {
			return err
		}
		f, err := inst.Func("run")
		if err != nil {
			t.Fatal(err)
		}
		v, err := f.Call(String("pooled"))
		if err != nil || v != String("pooled") {
			t.Fatalf("run = %v, %v", v, err)
		}
		return nil
	}
	s1 := mustStore(t, e, StoreConfig{})
	if err := run(s1); err != nil {
		t.Fatalf("first instance: %v", err)
	}
	s2 := mustStore(t, e, StoreConfig{})
	if err := run(s2); err == nil {
		t.Fatal("a second instance fit a pool of one")
	}
	s1.Close()
	s3 := mustStore(t, e, StoreConfig{})
	if err := run(s3); err != nil {
		t.Fatalf("an instance after the first was freed: %v", err)
	}
}
