package daemon

// The OS-thread and memory-mapping ceilings on agents.
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
//
// Each agent also costs about eight memory mappings (measured: 7.7 for an
// idle componentize-qjs agent; its linear memory and guard regions, its
// thread's stack and guard), and Linux refuses mappings past
// vm.max_map_count (65530 by default): a thread stack that cannot be
// mapped makes pthread_create fail, which the Go runtime turns into an
// abort (seen at 8,551 agents). So the daemon refuses a config that would
// pass that bound too.

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

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
// maxThreads allows, or more memory mappings than the system allows.
func checkThreads(cfg *config.Config, maxThreads int) error {
	if err := checkMaps(cfg); err != nil {
		return err
	}
	n, what := instancesOfConfig(cfg)
	if need := n + threadReserve; need > maxThreads {
		return fmt.Errorf("%w: %d %s need up to %d OS threads (one each while it waits in recv or a blocking call, and %d for the runtime), more than host.max_threads = %d; raise host.max_threads (with ulimit -u, kernel.threads-max and systemd's TasksMax), lower max_instances or spread the agents over more hosts",
			ErrTooManyAgents, n, what, need, threadReserve, maxThreads)
	}
	return nil
}

// instancesOfConfig is how many instances cfg's agents may run at once: one
// each, max_instances for a per-session agent; what names them ("agents",
// or "agent instances" when some agent is per-session).
func instancesOfConfig(cfg *config.Config) (n int, what string) {
	what = "agents"
	for _, a := range cfg.Agent {
		if a.Instances == config.InstancesPerSession {
			n += a.MaxInstances
			what = "agent instances (max_instances of each per-session agent)"
		} else {
			n++
		}
	}
	return n, what
}

// mapsPerAgent and mapReserve estimate the memory mappings a host needs.
const (
	mapsPerAgent = 8
	mapReserve   = 1000
)

// maxMapCountFile is Linux's bound on a process's memory mappings.
var maxMapCountFile = "/proc/sys/vm/max_map_count"

// checkMaps refuses a config whose agents would need more memory mappings
// than vm.max_map_count allows; where the bound cannot be read (not
// Linux), nothing is checked.
func checkMaps(cfg *config.Config) error {
	data, err := os.ReadFile(maxMapCountFile)
	if err != nil {
		return nil
	}
	limit, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return nil
	}
	n, what := instancesOfConfig(cfg)
	if need := n*mapsPerAgent + mapReserve; need > limit {
		return fmt.Errorf("%w: %d %s need about %d memory mappings (%d each, and %d for the rest), more than vm.max_map_count = %d; raise it (sysctl -w vm.max_map_count=%d) or spread the agents over more hosts",
			ErrTooManyAgents, n, what, need, mapsPerAgent, mapReserve, limit, roundUpPow2(need))
	}
	return nil
}

func roundUpPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// raiseMaxThreads sets the process's thread limit to n unless it is higher
// already (several daemons in one process, as in tests, share it).
func raiseMaxThreads(n int) {
	if prev := debug.SetMaxThreads(n); prev > n {
		debug.SetMaxThreads(prev)
	}
}
