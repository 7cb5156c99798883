package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestClusterSessions: a per-session agent on three daemons. Twenty
// sessions, each opened through some host, are spread over the hosts by
// placement (every host runs some), each runs in exactly one instance in
// the cluster, and a session's next message, sent through another host,
// reaches the same instance. The cluster's view shows each instance with
// its host. A host cut off from etcd fences: its sessions' instances stop
// and their next messages start them on the others, never two at once.
func TestClusterSessions(t *testing.T) {
	const sessions = 20
	e := etcdtest.Start(t, 1)
	agents := fmt.Sprintf("[agent.chat]\ncomponent = %q\ninstances = \"per-session\"\nmax_instances = 50\nstop_grace = \"1s\"\n",
		testenv.Agent(t, "agents", "echo"))
	proxy := etcdtest.NewProxy(t, e.Endpoint(0))
	hosts := []*fwdHost{startFwdHost(t, "a", e.Endpoints(), agents), startFwdHost(t, "b", e.Endpoints(), agents),
		startFwdHost(t, "c", []string{proxy.URL()}, agents)}
	settledMembers(t, hosts)
	ctx := t.Context()
	send := func(via *fwdHost, session string) {
		t.Helper()
		st, err := via.ctl.Send(ctx, "chat", "hi", control.SendOptions{Session: session})
		if err != nil || st.Reply != "echo: hi (session "+session+")" {
			t.Fatalf("session %s through %s: %+v, %v", session, via.name, st, err)
		}
	}
	for i := range sessions {
		send(hosts[i%3], fmt.Sprintf("s%02d", i))
	}
	for i := range sessions {
		send(hosts[(i+1)%3], fmt.Sprintf("s%02d", i))
	}
	// Where each session's instances are, from each host's own list.
	where := map[string][]string{}
	perHost := map[string]int{}
	for _, h := range hosts {
		for _, inst := range h.r.agent(t, "chat").Instances {
			where[inst.Session] = append(where[inst.Session], h.name)
			perHost[h.name]++
			if inst.Messages != 2 {
				t.Errorf("session %s on %s answered %d messages, want 2 (both reach one instance)", inst.Session, h.name, inst.Messages)
			}
		}
	}
	t.Logf("instances per host: %v", perHost)
	if len(where) != sessions {
		t.Errorf("%d sessions have instances, want %d: %v", len(where), sessions, where)
	}
	for s, hs := range where {
		if len(hs) != 1 {
			t.Errorf("session %s has instances on %v, want one", s, hs)
		}
	}
	for _, h := range hosts {
		if perHost[h.name] == 0 {
			t.Errorf("host %s runs no session: %v", h.name, perHost)
		}
	}
	// Every host's view agrees.
	for _, h := range hosts {
		testenv.Eventually(t, 10*time.Second, h.name+"'s view of the sessions", func() bool {
			st, err := h.ctl.Cluster(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, m := range st.Members {
				for s := range m.Sessions["chat"] {
					if len(where[s]) != 1 || where[s][0] != m.Name {
						return false
					}
					n++
				}
			}
			return n == sessions
		})
	}
	// c is cut off from etcd: it fences, halting its sessions' instances;
	// their next messages, through a and b, start instances there once
	// c's lease expired. No session ever runs on two hosts at once.
	w := watchSampled(map[string]*running{"a": hosts[0].r, "b": hosts[1].r, "c": hosts[2].r}, sessionsWhere)
	cut := time.Now()
	proxy.Cut()
	testenv.Eventually(t, 10*time.Second, "c to fence and halt its sessions' instances", func() bool {
		return len(hosts[2].r.agent(t, "chat").Instances) == 0
	})
	fenced := time.Since(cut)
	moved := 0
	for s, hs := range where {
		if hs[0] != "c" {
			continue
		}
		moved++
		send(hosts[moved%2], s)
		found := 0
		for _, h := range hosts[:2] {
			for _, inst := range h.r.agent(t, "chat").Instances {
				if inst.Session == s {
					found++
				}
			}
		}
		if found != 1 {
			t.Errorf("session %s, moved from c: %d instances on a and b, want 1", s, found)
		}
	}
	t.Logf("c fenced %s after the cut; its %d sessions answered on a and b %s after it", fenced.Round(time.Millisecond),
		moved, time.Since(cut).Round(time.Millisecond))
	if n := len(hosts[2].r.agent(t, "chat").Instances); n != 0 {
		t.Errorf("c, fenced, runs %d instances", n)
	}
	w.check(t)
}

// sessionsWhere maps each per-session instance's session to the hosts
// running one.
func sessionsWhere(hosts map[string]*running) map[string][]string {
	on := map[string][]string{}
	for name, h := range hosts {
		for _, a := range h.d.Agents() {
			for _, inst := range a.Instances {
				on[inst.Session] = append(on[inst.Session], name)
			}
		}
	}
	return on
}
