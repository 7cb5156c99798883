package daemon

import "errors"

// Sentinel errors callers test for.
var (
	// ErrNotServing is returned by the Backend's agent operations and by
	// Reload before Serve runs and after it has returned.
	ErrNotServing = errors.New("the daemon is not serving")
	// ErrStopping is returned by operations asked for while the daemon
	// shuts down.
	ErrStopping = errors.New("the daemon is shutting down")
	// ErrNeedsFuel refuses a reload that adds the first fuel-limited agent:
	// the engine meters fuel only when toolhostd starts with one.
	ErrNeedsFuel = errors.New("limits.fuel needs fuel metering, which toolhostd enables only at start when some agent has limits.fuel > 0; restart toolhostd to apply this config")
	// ErrServed is returned by a second call of Serve.
	ErrServed = errors.New("the daemon was already served")
)
