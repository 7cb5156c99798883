package toolhost

import "encoding/binary"

var handler func(input string) (string, error)

// Run registers the agent's entry point, the world's run export: the host
// calls f once with the agent's input; its string is run's ok, a non-nil
// error's message run's err. Call Run from an init function of package
// main (a reactor module has no main to run: its main is never called).
// A panic in f is not recovered: the Go runtime prints it with the
// goroutine's stack to stderr (which the host logs) and exits, which the
// host reports as a failure.
func Run(f func(input string) (string, error)) {
	if handler != nil {
		panic("toolhost: Run called twice")
	}
	handler = f
}

// runHandler calls the registered handler: (output, false) or (message,
// true).
func runHandler(input string) (string, bool) {
	if handler == nil {
		return "toolhost: the agent registered no Run handler (call toolhost.Run from an init function)", true
	}
	out, err := handler(input)
	if err != nil {
		return err.Error(), true
	}
	return out, false
}

// putU32 writes v little-endian at b[0:4].
func putU32(b []byte, v uint32) { binary.LittleEndian.PutUint32(b, v) }
