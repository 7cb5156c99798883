package toolhost

var handler func(input string) (string, error)

// Run registers the agent's entry point, the world's run export: the host
// calls f once with the agent's input; its string is run's ok, a non-nil
// error's message run's err. Call Run from an init function of package
// main (a reactor module has no main to run: its main is never called).
//
// An output that is not valid UTF-8 is not returned: run's err says so
// instead (the canonical ABI carries only valid UTF-8, the host would
// trap); in an error's message invalid UTF-8 is replaced by U+FFFD.
//
// A panic in f is not recovered: the Go runtime prints it with the
// goroutine's stack to stderr, which the host logs under the agent's name,
// and exits with status 2, which inside a component is a trap: the host
// reports the run as failed with that trap (its wasm backtrace names the
// panicking function), not as run's err.
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
		return sanitize(err.Error()), true
	}
	if err := checkUTF8("run's output", out); err != nil {
		return err.Error(), true
	}
	return out, false
}
