package control

import "errors"

var (
	// ErrConflict may be wrapped by a Backend's StartAgent, StopAgent or
	// RestartAgent for an operation the agent's state does not allow; the
	// API answers 409 with the error's text. Any other error answers 500.
	ErrConflict = errors.New("conflict")
	// ErrUnavailable may be wrapped by any Backend operation the daemon
	// cannot do now (not serving yet, shutting down); the API answers 503.
	ErrUnavailable = errors.New("unavailable")
	// ErrMisdirected may be wrapped by the refusal of a forwarded message
	// whose agent another host holds now (it moved): the API answers 421
	// and the forwarding host sends it to the new owner.
	ErrMisdirected = errors.New("misdirected: another host runs the agent")
	// ErrNotRunning is in the chain of every client error that means the
	// daemon could not be reached at all (no socket, nobody listening).
	ErrNotRunning = errors.New("toolhostd is not reachable")
	// ErrUnauthorized is in the chain of a client error for a 401 (TCP:
	// missing or wrong token) or 403 (unix socket: uid refused).
	ErrUnauthorized = errors.New("not authorized")
	// ErrInUse is returned by Serve when another process answers on the
	// control socket.
	ErrInUse = errors.New("control socket in use")
	// errNoToken: Options.Listen without a token.
	errNoToken = errors.New("control API on TCP needs a token")
)
