//go:build race

package conformance_test

// raceEnabled: the adapter is built with -race too when the tests are.
const raceEnabled = true
