package supervisor

import (
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/config"
)

func TestStateNames(t *testing.T) {
	// The names are the control API's and ps's: they must not change.
	want := map[State]string{Stopped: "stopped", Starting: "starting", Running: "running", Stopping: "stopping",
		Exited: "exited", Failed: "failed", Backoff: "backoff", Idle: "idle", Idle + 1: "unknown"}
	for s, name := range want {
		if got := s.String(); got != name {
			t.Errorf("State(%d).String() = %q, want %q", s, got, name)
		}
	}
}

func TestTransitions(t *testing.T) {
	for _, c := range []struct {
		from, to State
		want     bool
	}{
		{Stopped, Starting, true},
		{Starting, Running, true},
		{Starting, Idle, true},
		{Idle, Starting, true},
		{Running, Stopping, true},
		{Stopping, Idle, true},
		{Running, Backoff, true},
		{Backoff, Starting, true},
		{Running, Exited, true},
		{Exited, Starting, true},
		{Failed, Stopped, true},
		{Stopped, Running, false},   // an instance starts only from starting
		{Exited, Running, false},    // a finished agent is started afresh first
		{Idle, Running, false},      // a woken agent loads its component first
		{Backoff, Failed, false},    // a backoff ends in a start or a stop
		{Stopping, Starting, false}, // a stop completes before a start
		{Idle + 1, Stopped, false},
	} {
		if got := legal(c.from, c.to); got != c.want {
			t.Errorf("legal(%s, %s) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
	// Every state can be left and reached, and stopped is reachable from
	// every state but itself (an operator's stop ends anywhere).
	reached := map[State]bool{}
	for from := Stopped; from <= Idle; from++ {
		if len(transitions[from]) == 0 {
			t.Errorf("%s cannot be left", from)
		}
		for _, to := range transitions[from] {
			reached[to] = true
		}
		if from != Stopped && !legal(from, Stopped) {
			t.Errorf("%s cannot be stopped", from)
		}
	}
	for s := Stopped; s <= Idle; s++ {
		if !reached[s] {
			t.Errorf("%s cannot be reached", s)
		}
	}
}

func TestNextDelay(t *testing.T) {
	r := newRecord("a", &config.Agent{
		AgentRestart: config.AgentRestart{RestartBackoff: config.Backoff{
			Initial: config.Duration{Duration: 100 * time.Millisecond},
			Max:     config.Duration{Duration: time.Second},
		}},
	}, nil)
	short := time.Millisecond
	var got []time.Duration
	for range 6 {
		got = append(got, r.nextDelay(short))
	}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("delays %v, want %v ms", got, want)
		}
	}
	if d := r.nextDelay(time.Second); d != 100*time.Millisecond {
		t.Errorf("after a run as long as the max backoff: %v, want the initial", d)
	}
	if d := r.nextDelay(short); d != 200*time.Millisecond {
		t.Errorf("then: %v", d)
	}
}

func TestRestarts(t *testing.T) {
	for _, c := range []struct {
		policy string
		failed bool
		want   bool
	}{
		{"never", false, false}, {"never", true, false},
		{"on-failure", false, false}, {"on-failure", true, true},
		{"always", false, true}, {"always", true, true},
	} {
		if got := restarts(c.policy, c.failed); got != c.want {
			t.Errorf("restarts(%q, failed=%v) = %v", c.policy, c.failed, got)
		}
	}
}

// TestOplogKeys: the oplog key of each kind of instance, and back.
func TestOplogKeys(t *testing.T) {
	for _, tc := range []struct {
		key, session, oneOff string
		ok                   bool
	}{
		{key: OplogKey("talk", "alice"), session: "alice", ok: true},
		{key: OplogKey("talk", "#hash"), session: "#hash", ok: true},
		{key: OplogKey("talk", "a/b"), session: "a/b", ok: true},
		{key: OneOffKey("talk", "m1"), oneOff: "m1", ok: true},
		{key: OplogKey("talk", "")},    // the single instance's
		{key: OplogKey("talker", "x")}, // another agent's
		{key: "talk/"},
	} {
		session, oneOff, ok := InstanceOf("talk", tc.key)
		if session != tc.session || oneOff != tc.oneOff || ok != tc.ok {
			t.Errorf("InstanceOf(talk, %q) = %q, %q, %v; want %q, %q, %v", tc.key, session, oneOff, ok, tc.session, tc.oneOff, tc.ok)
		}
	}
	if a, b := OplogKey("talk", "#m1"), OneOffKey("talk", "m1"); a == b {
		t.Errorf("session #m1 and one-off m1 share the key %q", a)
	}
}
