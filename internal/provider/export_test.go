package provider

import "time"

// SetKeyTTL sets keyTTL for a test and returns the function that restores it.
func SetKeyTTL(d time.Duration) (restore func()) {
	old := keyTTL
	keyTTL = d
	return func() { keyTTL = old }
}
