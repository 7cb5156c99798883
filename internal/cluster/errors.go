package cluster

import "errors"

var (
	// ErrNameTaken is returned when a live member already holds this
	// host's name (another host, or this one's previous process whose
	// lease has not expired yet: Run tries again).
	ErrNameTaken = errors.New("cluster: another live member holds this name")
	// ErrLeaseLost is the end of a session whose lease could not be
	// renewed in time: the host fenced itself.
	ErrLeaseLost = errors.New("cluster: lease lost")
)

// ErrSessionHeld is ClaimSession's answer when another member holds the
// session's key (or this host is not joined): its messages go there.
var ErrSessionHeld = errors.New("cluster: the session is held by another member")
