package wasmtime

import (
	"context"
	"sync"
	"testing"
	"time"
)

// ticking advances e's epoch every millisecond until the test ends.
func ticking(t *testing.T, e *Engine) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
				e.IncrementEpoch()
			}
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func TestInterruptStopsSpinningGuest(t *testing.T) {
	te := newTrapEnv(t, EngineConfig{EpochInterruption: true})
	ticking(t, te.e)
	s, inst := te.instance(t, StoreConfig{})
	if err := s.EnableInterrupt(); err != nil {
		t.Fatal(err)
	}
	// Without Interrupt the guest keeps running across many ticks.
	if _, err := call(t, inst, "grow", U32(0)); err != nil {
		t.Fatalf("a store with the interrupt hook must run guest code: %v", err)
	}
	go func() {
		// A spinning guest gives no sign: the pause lets it spin through
		// several ticks first, so that Interrupt stops code under way.
		time.Sleep(30 * time.Millisecond)
		s.Interrupt()
	}()
	_, err := call(t, inst, "spin")
	if err == nil || !IsInterrupt(err) {
		t.Fatalf("spin returned %v, want an interrupt", err)
	}
	if IsInterrupt(errHost) {
		t.Fatal("IsInterrupt of an unrelated error")
	}
}

func TestInterruptAfterCloseAndWithoutEnable(t *testing.T) {
	te := newTrapEnv(t, EngineConfig{EpochInterruption: true})
	ticking(t, te.e)
	s, inst := te.instance(t, StoreConfig{})
	s.Interrupt() // not enabled: nothing happens
	if err := s.EnableInterrupt(); err != nil {
		t.Fatal(err)
	}
	// The early Interrupt left no flag behind: guest code runs across ticks
	// (advanced here, besides the ticker's, so that the call meets them).
	for range 20 {
		te.e.IncrementEpoch()
	}
	if _, err := call(t, inst, "grow", U32(0)); err != nil {
		t.Fatalf("an Interrupt before EnableInterrupt stopped later guest code: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s.Interrupt() // after close: nothing happens, no crash
}

func TestEnableInterruptNeedsEpochs(t *testing.T) {
	te := newTrapEnv(t, EngineConfig{})
	s, _ := te.instance(t, StoreConfig{})
	if err := s.EnableInterrupt(); err == nil {
		t.Fatal("EnableInterrupt succeeded on an engine without epoch interruption")
	}
}
