package daemon

// The OS-thread ceiling on agents.
//
// Every agent waiting in inbox.recv, or in any blocking host call, holds an
// OS thread: the guest's stack is on that thread, inside a wasmtime call,
// and wasmtime v39's C API can suspend a call (async, on fibers) only for
// core modules (wasmtime/async.h: wasmtime_func_call_async,
// wasmtime_linker_define_async_func); its component API calls synchronously
// only (wasmtime/component/func.h). The Go runtime aborts the whole process
// past runtime/debug.SetMaxThreads threads (10,000 by default), so the
// daemon refuses a config with more agents than host.max_threads leaves
// room for, at start and on reload, rather than crash under load.

import (
	"fmt"
	"runtime/debug"

	"github.com/toolhostd/toolhostd/internal/config"
)

// threadReserve is the threads kept for everything but agents: the Go
// scheduler's (GOMAXPROCS and the system monitor), threads in system calls
// and cgo, wasmtime's compiler threads.
const threadReserve = 256

// maxThreads is host.max_threads (its default in a config made by hand).
func maxThreads(cfg *config.Config) int {
	if cfg.Host.MaxThreads == 0 {
		return config.DefaultMaxThreads
	}
	return cfg.Host.MaxThreads
}

// checkThreads refuses a config whose agents could need more threads than
// maxThreads allows.
func checkThreads(cfg *config.Config, maxThreads int) error {
	if need := len(cfg.Agent) + threadReserve; need > maxThreads {
		return fmt.Errorf("%w: %d agents need up to %d OS threads (one each while it waits in recv or a blocking call, and %d for the runtime), more than host.max_threads = %d; raise host.max_threads (with ulimit -u, kernel.threads-max and systemd's TasksMax) or spread the agents over more hosts",
			ErrTooManyAgents, len(cfg.Agent), need, threadReserve, maxThreads)
	}
	return nil
}

// raiseMaxThreads sets the process's thread limit to n unless it is higher
// already (several daemons in one process, as in tests, share it).
func raiseMaxThreads(n int) {
	if prev := debug.SetMaxThreads(n); prev > n {
		debug.SetMaxThreads(prev)
	}
}
