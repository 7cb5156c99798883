package host

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestExampleEvery: with "every", hello and fanout run as a daemon's agents:
// a round, a wait, another round, until the host stops them; then run
// returns ok saying how many rounds there were.
func TestExampleEvery(t *testing.T) {
	s := env(t)
	for _, tc := range []struct {
		agent, input string
		echoes       int64 // echo calls a round makes
	}{
		{"hello", `{"toolings": ["mem"], "call": {"tooling": "mem", "tool": "echo", "arguments": {"text": "hey"}}, "every": 0.05}`, 1},
		{"fanout", `{"tooling": "mem", "n": 2, "arguments": {"text": "x"}, "slow": null, "every": 0.05}`, 2},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			p := s.program(t, "agents", tc.agent)
			before := s.mem.Calls("echo")
			a := s.host.Start(p, probeOpts{name: tc.agent, grants: []string{"mem"}}.config(), tc.input)
			testenv.Eventually(t, 20*time.Second, "three rounds", func() bool { return s.mem.Calls("echo")-before >= 3*tc.echoes })
			a.Stop()
			out, err := waitAgent(t, a, 30*time.Second)
			m := regexp.MustCompile(`^stopped after (\d+) rounds$`).FindStringSubmatch(out)
			if err != nil || m == nil {
				t.Fatalf("%s = %q, %v; want \"stopped after N rounds\"", tc.agent, out, err)
			}
			if n, _ := strconv.Atoi(m[1]); n < 3 {
				t.Errorf("%s: %d rounds, the server saw at least 3", tc.agent, n)
			}
		})
	}
}

// TestExampleEveryStopMidRound: a shutdown that arrives while fanout waits
// for a round's results stops it the way one between rounds does (the
// round cut short counts), not as a failure.
func TestExampleEveryStopMidRound(t *testing.T) {
	s := env(t)
	p := s.program(t, "agents", "fanout")
	tag := t.Name()
	a := s.host.Start(p, probeOpts{name: "fanout", grants: []string{"mem"}}.config(),
		`{"tooling": "mem", "tool": "slow", "n": 1, "arguments": {"tag": "`+tag+`"}, "slow": null, "every": 0.05}`)
	testenv.Recv(t, s.mem.SlowStarted(tag), 20*time.Second, "the round's call to reach the server")
	a.Stop()
	out, err := waitAgent(t, a, 30*time.Second)
	if err != nil || out != "stopped after 1 rounds" {
		t.Fatalf("fanout = %q, %v; want \"stopped after 1 rounds\"", out, err)
	}
}
