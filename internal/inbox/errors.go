package inbox

import "errors"

// Sentinel errors of Reserve and OpenStream.
var (
	// ErrFull: the open calls plus undelivered envelopes already reach the
	// inbox capacity (the contract's busy).
	ErrFull = errors.New("inbox full")
	// ErrShutdown: the shutdown envelope has been enqueued; nothing more
	// will be delivered.
	ErrShutdown = errors.New("inbox shut down")
	// ErrDuplicate: the id already has a reservation or an open stream.
	ErrDuplicate = errors.New("duplicate id")
)
