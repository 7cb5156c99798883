package control

import "time"

// ReadEvents is readEvents, for the tests.
var ReadEvents = readEvents

// SetStreamIdle sets how long a forwarded stream may be silent, for the
// tests; it returns the old value.
func SetStreamIdle(d time.Duration) time.Duration {
	old := streamIdle
	streamIdle = d
	return old
}
