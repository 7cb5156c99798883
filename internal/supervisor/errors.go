package supervisor

import (
	"fmt"

	"github.com/toolhostd/toolhostd/internal/control"
)

// Sentinel errors callers test for.
var (
	// ErrNotServing is returned by the operations before Run and after
	// Detach. Both wrap control.ErrUnavailable: the control API answers 503.
	ErrNotServing = fmt.Errorf("the daemon is not serving (%w)", control.ErrUnavailable)
	// ErrStopping is returned by operations asked for once Shutdown began.
	ErrStopping = fmt.Errorf("the daemon is shutting down (%w)", control.ErrUnavailable)
)
