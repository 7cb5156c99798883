package wasmtime

// #include "capi.h"
import "C"

import (
	"errors"
	"sync"
)

// OptLevel is Cranelift's optimisation level.
type OptLevel uint8

// Optimisation levels (wasmtime_opt_level_enum). The zero value is Speed,
// wasmtime's default.
const (
	OptSpeed OptLevel = iota
	OptNone
	OptSpeedAndSize
)

// EngineConfig configures an Engine. The zero value is wasmtime's defaults
// with parallel compilation off.
type EngineConfig struct {
	// EpochInterruption makes guests check the engine's epoch so that
	// Store.SetEpochDeadline can interrupt them (IncrementEpoch advances it).
	EpochInterruption bool
	// ConsumeFuel makes guests consume fuel (Store.SetFuel).
	ConsumeFuel bool
	// ParallelCompilation compiles functions on several threads.
	ParallelCompilation bool
	// OptLevel is Cranelift's optimisation level.
	OptLevel OptLevel
	// Pooling, if set, makes the engine allocate instances, memories and
	// tables from pools reserved up front instead of mapping each anew.
	Pooling *PoolingConfig
}

// PoolingConfig sizes the pooling allocator: how many of each the engine
// can have alive at once (instantiation fails beyond) and each linear
// memory's maximum size. Zero fields keep wasmtime's defaults.
type PoolingConfig struct {
	ComponentInstances uint32
	CoreInstances      uint32
	Memories           uint32
	Tables             uint32
	MaxMemorySize      uint64
}

// Engine compiles components; it is safe for concurrent use.
type Engine struct {
	mu  sync.RWMutex // guards ptr against Close racing IncrementEpoch
	ptr *C.wasm_engine_t
	cfg EngineConfig
}

// NewEngine creates an engine with the component model enabled.
func NewEngine(cfg EngineConfig) (*Engine, error) {
	c := C.wasm_config_new()
	if c == nil {
		return nil, errors.New("wasmtime: cannot allocate config")
	}
	C.wasmtime_config_wasm_component_model_set(c, true)
	C.wasmtime_config_epoch_interruption_set(c, C.bool(cfg.EpochInterruption))
	C.wasmtime_config_consume_fuel_set(c, C.bool(cfg.ConsumeFuel))
	C.wasmtime_config_parallel_compilation_set(c, C.bool(cfg.ParallelCompilation))
	var lvl C.wasmtime_opt_level_t
	switch cfg.OptLevel {
	case OptSpeed:
		lvl = C.WASMTIME_OPT_LEVEL_SPEED
	case OptNone:
		lvl = C.WASMTIME_OPT_LEVEL_NONE
	case OptSpeedAndSize:
		lvl = C.WASMTIME_OPT_LEVEL_SPEED_AND_SIZE
	default:
		C.wasm_config_delete(c)
		return nil, errors.New("wasmtime: invalid OptLevel")
	}
	C.wasmtime_config_cranelift_opt_level_set(c, lvl)
	if p := cfg.Pooling; p != nil {
		pc := C.wasmtime_pooling_allocation_config_new()
		if p.ComponentInstances > 0 {
			C.wasmtime_pooling_allocation_config_total_component_instances_set(pc, C.uint32_t(p.ComponentInstances))
		}
		if p.CoreInstances > 0 {
			C.wasmtime_pooling_allocation_config_total_core_instances_set(pc, C.uint32_t(p.CoreInstances))
		}
		if p.Memories > 0 {
			C.wasmtime_pooling_allocation_config_total_memories_set(pc, C.uint32_t(p.Memories))
		}
		if p.Tables > 0 {
			C.wasmtime_pooling_allocation_config_total_tables_set(pc, C.uint32_t(p.Tables))
		}
		if p.MaxMemorySize > 0 {
			C.wasmtime_pooling_allocation_config_max_memory_size_set(pc, C.size_t(p.MaxMemorySize))
		}
		C.wasmtime_pooling_allocation_strategy_set(c, pc) // copies it
		C.wasmtime_pooling_allocation_config_delete(pc)
	}
	e := C.wasm_engine_new_with_config(c) // takes c
	if e == nil {
		return nil, errors.New("wasmtime: cannot create engine")
	}
	return &Engine{ptr: e, cfg: cfg}, nil
}

// Config returns the configuration the engine was created with.
func (e *Engine) Config() EngineConfig { return e.cfg }

// IncrementEpoch advances the engine's epoch by one; any goroutine may call
// it. It panics if the engine is closed.
func (e *Engine) IncrementEpoch() {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.ptr == nil {
		closedPanic("Engine")
	}
	C.wasmtime_engine_increment_epoch(e.ptr)
}

// Close releases the engine. Components, Linkers and Stores made from it stay
// valid. Idempotent.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ptr != nil {
		C.wasm_engine_delete(e.ptr)
		e.ptr = nil
	}
	return nil
}

// raw returns the C engine for a short C call; the caller holds e.mu.RLock.
func (e *Engine) lock(what string) (*C.wasm_engine_t, error) {
	e.mu.RLock()
	if e.ptr == nil {
		e.mu.RUnlock()
		return nil, closedErr(what + ": engine")
	}
	return e.ptr, nil
}

func (e *Engine) unlock() { e.mu.RUnlock() }
