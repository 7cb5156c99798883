package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/toolhostd/toolhostd/internal/cluster"
	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestDurableClusterMove: `toolhostd serve` hosts share a durable agent
// (the paced test agent, as in TestDurableMessageSurvivesKill) through
// etcd. A message is sent, streaming, to one host; the host that runs the
// agent is killed (kill -9) mid-reply; the host placement gives the agent
// next claims it once the killed host's lease expired, replays its
// instance from the oplog in etcd and answers the message. The agent was
// given the message once. Sent at the killed host, its stream fails, and
// a retry with the same idempotency key on the next host gets the whole
// reply (a GET of its id too). Sent at another host (forwarded to the
// owner), the stream goes on: the forwarding host follows the message to
// the next host (a third one), or its own instance takes it over (the
// next host is the forwarding one); either way the reply is the whole
// content and its deltas are not repeated. The same for a per-session
// agent's session, which the host placement gives it next resumes once
// the dead host's key of it went (with no message to it).
func TestDurableClusterMove(t *testing.T) {
	for _, tc := range []struct {
		name    string
		hosts   []string
		entry   string // where the message is sent: "owner", "next" (the host that takes over), "third"
		session string // "": a single agent; else a per-session agent's session
	}{
		{"at its owner", []string{"a", "b"}, "owner", ""},
		{"forwarded, taken over by the forwarding host", []string{"a", "b"}, "next", ""},
		{"forwarded, followed to a third host", []string{"a", "b", "c"}, "third", ""},
		// A per-session agent runs on every host, each session's instance
		// on the holder of its key: the session a dead host held is
		// resumed by the host placement gives it once that key went.
		{"per-session at its owner", []string{"a", "b"}, "owner", "s1"},
		{"per-session forwarded, taken over by the forwarding host", []string{"a", "b"}, "next", "s1"},
		{"per-session forwarded, followed to a third host", []string{"a", "b", "c"}, "third", "s1"},
	} {
		t.Run(tc.name, func(t *testing.T) { durableClusterMove(t, tc.hosts, tc.entry, tc.session) })
	}
}

func durableClusterMove(t *testing.T, names []string, entry, session string) {
	const ttl = 2 * time.Second
	const token = "durable-move-token"
	const content = "one two three four five six "
	noConfig(t)
	e := etcdtest.Start(t, 1)
	ps, psURL := newHoldPace(t, 3)
	instances := "single"
	if session != "" {
		instances = "per-session"
	}
	rest := fmt.Sprintf("[tooling.pace]\nurl = %q\n\n[agent.paced]\ncomponent = %q\ntoolings = [\"pace\"]\nstop_grace = \"1s\"\ndurable = true\ninstances = %q\n",
		psURL, testenv.Agent(t, "test-agents", "paced"), instances)
	dir := shortTempDir(t, "i41mv")
	hosts := map[string]*clusterHost{}
	for _, name := range names {
		hosts[name] = startClusterHostToken(t, dir, name, ttl, e.Endpoints(), token, rest)
	}
	placed := "paced" // what placement places: the agent, or its session
	if session != "" {
		placed += "\x00" + session
	}
	var owner *clusterHost
	if session == "" {
		owner = runner(t, hosts, "paced", 60*time.Second)
	} else {
		settled(t, hosts)
		owner = hosts[cluster.Place(placed, names)]
	}
	var remaining []string
	for _, n := range names {
		if n != owner.name {
			remaining = append(remaining, n)
		}
	}
	sort.Strings(remaining)
	next := cluster.Place(placed, remaining)
	via := owner
	switch entry {
	case "next":
		via = hosts[next]
	case "third":
		for _, n := range remaining {
			if n != next {
				via = hosts[n]
			}
		}
	}
	if entry != "owner" && session == "" {
		// The entry host forwards to the owner: it must know its address.
		testenv.Eventually(t, 30*time.Second, via.name+" seeing "+owner.name+" settled with an address", func() bool {
			st, err := via.ctl.Cluster(t.Context())
			if err != nil || st.Owners["paced"] != owner.name {
				return false
			}
			for _, m := range st.Members {
				if m.Name == owner.name {
					return m.Address != ""
				}
			}
			return false
		})
	}

	type sendResult struct {
		st  control.MessageStatus
		err error
	}
	sent := make(chan sendResult, 1)
	var mu sync.Mutex
	var deltas strings.Builder
	go func() {
		st, err := via.ctl.SendStream(context.Background(), "paced", content, control.SendOptions{IdempotencyKey: "k1", Session: session}, func(ev message.Event) {
			if ev.Kind == message.KindDelta {
				mu.Lock()
				deltas.WriteString(ev.Text)
				mu.Unlock()
			}
		})
		sent <- sendResult{st, err}
	}()
	testenv.Recv(t, ps.held, 60*time.Second, "the reply's third pause")
	cli := etcdtest.Client(t, e.Endpoints()...)
	if resp, err := cli.Get(t.Context(), "/toolhostd-oplog/paced", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count == 0 {
		t.Fatalf("the paced agent's oplog in etcd: %v keys, %v", resp, err)
	}
	if err := owner.proc.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-owner.proc.exited
	ps.releaseHeld()
	delete(hosts, owner.name)
	t.Logf("sent at %s; %s killed; %s takes over", via.name, owner.name, next)

	r := testenv.Recv(t, sent, 60*time.Second, "the send to end")
	h := hosts[next]
	if entry == "owner" {
		if r.err == nil {
			t.Errorf("the stream from the killed host ended without an error: %+v", r.st)
		}
		// Retries with the key from the kill on: each is refused to retry
		// later (the key's message is in flight on the dead host, then on
		// the next one) until the next host resumed the message and
		// answers with it; none is given the unknown outcome.
		var st control.MessageStatus
		retries := 0
		testenv.Eventually(t, 60*time.Second, "a retry with the key to get the resumed message", func() bool {
			retries++
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			var err error
			st, err = h.ctl.Send(ctx, "paced", content, control.SendOptions{IdempotencyKey: "k1", Session: session})
			switch {
			case err != nil && strings.Contains(err.Error(), "retry later"):
				return false
			case err != nil:
				t.Fatalf("retry %d on %s: %v", retries, h.name, err)
			case st.Status == message.StatusFailed:
				t.Fatalf("retry %d on %s: %+v %+v, want the resumed message", retries, h.name, st, st.Error)
			}
			return true
		})
		t.Logf("%d retries until the message was resumed", retries)
		if session == "" {
			if got := runner(t, hosts, "paced", 30*time.Second); got != h {
				t.Fatalf("paced runs on %s, want %s (placement)", got.name, next)
			}
		}
		var err error
		for err == nil && (st.Status == message.StatusQueued || st.Status == message.StatusWorking) {
			st, err = h.ctl.WaitMessage(t.Context(), "paced", st.ID, 30*time.Second)
		}
		if err != nil || st.Status != message.StatusDone || st.Reply != content {
			t.Fatalf("retry on %s: %+v %v, want done with the whole content\n%s", h.name, st, err, tail(h.proc.out.String(), 4000))
		}
		if got, err := h.ctl.Message(t.Context(), "paced", st.ID); err != nil || got.Reply != content {
			t.Errorf("GET of message %s on %s: %+v %v", st.ID, h.name, got, err)
		}
	} else {
		if r.err != nil || r.st.Status != message.StatusDone || r.st.Reply != content {
			t.Fatalf("the stream through %s: %+v %v, want done with the whole content\n%s\n%s", via.name, r.st, r.err,
				tail(via.proc.out.String(), 4000), tail(h.proc.out.String(), 4000))
		}
		mu.Lock()
		got := deltas.String()
		mu.Unlock()
		if got != content {
			t.Errorf("the stream's deltas: %q, want %q once", got, content)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		again, err := via.ctl.Send(ctx, "paced", content, control.SendOptions{IdempotencyKey: "k1", Session: session})
		if err != nil {
			t.Fatalf("k1 retried on %s: %v", via.name, err)
		}
		if again.ID != r.st.ID || again.Reply != content {
			t.Errorf("k1 retried on %s: %+v, want the reply of message %s", via.name, again, r.st.ID)
		}
	}
	// The next host shows the oplog it replayed and goes on in, from etcd
	// (toolhostd oplog, ps).
	ol, err := h.ctl.Oplog(t.Context(), "paced", session, false)
	if err != nil || len(ol.Entries) == 0 || ol.Component == "" {
		t.Errorf("the oplog of paced %q on %s: %d entries, %v", session, h.name, len(ol.Entries), err)
	}
	if a, err := h.ctl.Agent(t.Context(), "paced"); err != nil || a.Oplog == nil || a.Oplog.Entries == 0 {
		t.Errorf("ps of paced on %s: %+v %v, want its oplog's entries", h.name, a, err)
	}
	ps.check(t, content, "kill")
}

// settled waits until every host sees every host as a settled member
// with a control API address: placement is then over all of them.
func settled(t *testing.T, hosts map[string]*clusterHost) {
	t.Helper()
	testenv.Eventually(t, 60*time.Second, "every member settled on every host", func() bool {
		for _, h := range hosts {
			st, err := h.ctl.Cluster(t.Context())
			if err != nil || len(st.Members) != len(hosts) {
				return false
			}
			for _, m := range st.Members {
				if !m.Settled || m.Address == "" {
					return false
				}
			}
		}
		return true
	})
}
