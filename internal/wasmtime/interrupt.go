package wasmtime

/*
#include <stdatomic.h>
#include <stdlib.h>
#include "capi.h"

// Declared here rather than in capi.h: only this file uses them. The header
// test checks them against wasmtime/store.h.
typedef uint8_t wasmtime_update_deadline_kind_t;
#define WASMTIME_UPDATE_DEADLINE_CONTINUE 0
void wasmtime_store_epoch_deadline_callback(
    wasmtime_store_t *store,
    wasmtime_error_t *(*func)(wasmtime_context_t *context, void *data, uint64_t *epoch_deadline_delta,
                              wasmtime_update_deadline_kind_t *update_kind),
    void *data, void (*finalizer)(void *));

// th_interrupt_cb runs when a store with an interrupt flag reaches its epoch
// deadline (every tick): it traps once the flag is set and otherwise extends
// the deadline by one tick. It is pure C so a tick costs no cgo crossing.
static wasmtime_error_t *th_interrupt_cb(wasmtime_context_t *ctx, void *data, uint64_t *delta,
                                         wasmtime_update_deadline_kind_t *kind) {
  (void)ctx;
  if (atomic_load((_Atomic int *)data)) {
    return wasmtime_error_new("interrupted by the host");
  }
  *delta = 1;
  *kind = WASMTIME_UPDATE_DEADLINE_CONTINUE;
  return NULL;
}

static void *th_interrupt_enable(wasmtime_store_t *store) {
  _Atomic int *flag = malloc(sizeof(_Atomic int));
  if (flag == NULL) {
    return NULL;
  }
  atomic_init(flag, 0);
  wasmtime_store_epoch_deadline_callback(store, th_interrupt_cb, flag, free);
  wasmtime_context_set_epoch_deadline(wasmtime_store_context(store), 1);
  return flag;
}

static void th_interrupt_set(void *flag) { atomic_store((_Atomic int *)flag, 1); }
*/
import "C"

import (
	"errors"
	"strings"
	"sync"
	"unsafe"
)

// interruptMsg is the message of the error a guest interrupted by the host
// fails with (see th_interrupt_cb).
const interruptMsg = "interrupted by the host"

// interruptFlag is a Store's C interrupt flag, owned by wasmtime; mu
// guards it against Interrupt racing Close.
type interruptFlag struct {
	mu   sync.Mutex
	flag unsafe.Pointer
}

// EnableInterrupt lets Interrupt stop this store's guest code from another
// goroutine. The engine must have EpochInterruption; guest code then checks
// a flag at every epoch tick (cheap: no cgo crossing). It replaces any epoch
// deadline set with SetEpochDeadline. Call it once, before guest code runs,
// from the goroutine that owns the store.
func (s *Store) EnableInterrupt() error {
	s.mustOpen("EnableInterrupt")
	if !s.engine.cfg.EpochInterruption {
		return errors.New("wasmtime: EnableInterrupt needs an engine with EpochInterruption")
	}
	s.intr.mu.Lock()
	defer s.intr.mu.Unlock()
	if s.intr.flag != nil {
		return nil
	}
	flag := C.th_interrupt_enable(s.ptr) // freed by wasmtime with the store
	if flag == nil {
		return errors.New("wasmtime: cannot allocate the interrupt flag")
	}
	s.intr.flag = unsafe.Pointer(flag)
	return nil
}

// Interrupt makes the store's guest code trap at its next epoch check (within
// one tick of the engine's epoch). Any goroutine may call it, also after
// Close; without EnableInterrupt it does nothing. A host function that is
// running is not interrupted: the trap comes when the guest runs again.
func (s *Store) Interrupt() {
	s.intr.mu.Lock()
	defer s.intr.mu.Unlock()
	if s.intr.flag != nil {
		C.th_interrupt_set(s.intr.flag)
	}
}

// IsInterrupt reports whether err is the failure of a guest stopped by
// Store.Interrupt.
func IsInterrupt(err error) bool {
	var t *Trap
	return errors.As(err, &t) && t.Cause == nil && strings.Contains(t.Message, interruptMsg)
}

// closeInterrupt forgets the flag before wasmtime frees it with the store.
func (s *Store) closeInterrupt() {
	s.intr.mu.Lock()
	s.intr.flag = nil
	s.intr.mu.Unlock()
}
