package supervisor

// State is where an agent is in its life, as status.Agent reports it.
type State uint8

// Agent states.
const (
	Stopped  State = iota // stopped by the daemon or an operator (a new record too)
	Starting              // loading the component, instantiating
	Running
	Stopping // shutdown envelope sent, within the grace
	Exited   // run returned ok and the policy does not restart it
	Failed   // failed and not restarted (policy never, or a load failure)
	Backoff  // waiting to be restarted
	Idle     // start = "on-message": waiting for a message to start
)

var stateNames = [...]string{
	Stopped: "stopped", Starting: "starting", Running: "running", Stopping: "stopping",
	Exited: "exited", Failed: "failed", Backoff: "backoff", Idle: "idle",
}

// String is the state's name in status.Agent and the control API.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

// transitions are the states each state may go to. A service that is
// replaced writes nothing (its generation is stale), so these are the
// moves of one record's current service and of the operations on it.
var transitions = [...][]State{
	Stopped:  {Starting},
	Starting: {Running, Stopped, Failed, Backoff, Idle},
	Running:  {Stopping, Stopped, Exited, Failed, Backoff},
	Stopping: {Stopped, Idle, Exited, Failed, Backoff},
	Exited:   {Starting, Stopped},
	Failed:   {Starting, Stopped},
	Backoff:  {Starting, Stopped},
	Idle:     {Starting, Stopped},
}

// legal reports whether an agent in from may go to to.
func legal(from, to State) bool {
	if int(from) >= len(transitions) {
		return false
	}
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}
