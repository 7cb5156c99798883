package daemon

import (
	"errors"
	"fmt"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/supervisor"
)

// Sentinel errors callers test for.
var (
	// ErrNotServing is returned by the Backend's agent operations and by
	// Reload before Serve runs and after it has returned.
	// Both wrap control.ErrUnavailable: the control API answers 503.
	ErrNotServing = supervisor.ErrNotServing
	// ErrStopping is returned by operations asked for while the daemon
	// shuts down.
	ErrStopping = supervisor.ErrStopping
	// ErrNeedsFuel refuses a reload that adds the first fuel-limited agent:
	// the engine meters fuel only when toolhostd starts with one.
	ErrNeedsFuel = errors.New("limits.fuel needs fuel metering, which toolhostd enables only at start when some agent has limits.fuel > 0; restart toolhostd to apply this config")
	// ErrTooManyAgents refuses a config with more agents than
	// host.max_threads leaves threads for, or than vm.max_map_count leaves
	// memory mappings for (see threads.go).
	ErrTooManyAgents = errors.New("too many agents for this host")
	// ErrNotOwner refuses an operator's start or restart of an agent that
	// another host of the cluster runs (control API: 409).
	ErrNotOwner = fmt.Errorf("the agent is placed on another host of the cluster (%w)", control.ErrConflict)
	// ErrServed is returned by a second call of Serve.
	ErrServed = errors.New("the daemon was already served")
)
