package forward

import "errors"

// ErrMoved is in the chain of a Deliver error that another try may cure:
// the owner answered that it does not run the agent now (it moved), or it
// could not be reached (it may be dying). The error also matches
// message.ErrUnavailable.
var ErrMoved = errors.New("the agent's host does not run it now or cannot be reached")
