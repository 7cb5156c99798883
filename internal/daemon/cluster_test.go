package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/metrics"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// clusterConfig is a config of n probe agents that wait for their inbox
// (real QuickJS components), as host name of a cluster on endpoints.
func clusterConfig(t *testing.T, name string, endpoints []string, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(header(t))
	fmt.Fprintf(&b, "[cluster]\nname = %q\nlease_ttl = \"2s\"\nsettle = \"200ms\"\nmoves_per_second = 100\nprefix = \"/daemon-test\"\netcd = { endpoints = [", name)
	for i, e := range endpoints {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", e)
	}
	b.WriteString("] }\n\n")
	probe := testenv.Agent(t, "test-agents-qjs", "probe")
	input := probeInput(t, map[string]any{"op": "recv"})
	for i := range n {
		fmt.Fprintf(&b, "[agent.a%02d]\ncomponent = %q\ninput = %q\nstop_grace = \"5s\"\n\n", i, probe, input)
	}
	return b.String()
}

// where maps each agent running on some host to those hosts.
func where(hosts map[string]*running) map[string][]string {
	out := map[string][]string{}
	for name, h := range hosts {
		for _, a := range h.d.Agents() {
			if a.State == stateRunning || a.State == stateStopping {
				out[a.Name] = append(out[a.Name], name)
			}
		}
	}
	return out
}

// overlapWatch samples the hosts every 5ms until stopped and records any
// agent (or what sample maps to hosts) seen running on two hosts at once.
type overlapWatch struct {
	mu     sync.Mutex
	hosts  map[string]*running
	sample func(map[string]*running) map[string][]string
	seen   []string
	stop   context.CancelFunc
	done   chan struct{}
}

// watchOverlaps watches the agents of hosts (where).
func watchOverlaps(hosts map[string]*running) *overlapWatch { return watchSampled(hosts, where) }

func watchSampled(hosts map[string]*running, sample func(map[string]*running) map[string][]string) *overlapWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &overlapWatch{hosts: hosts, sample: sample, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			w.mu.Lock()
			for a, hs := range w.sample(w.hosts) {
				if len(hs) > 1 {
					w.seen = append(w.seen, fmt.Sprintf("%s on %v", a, hs))
				}
			}
			w.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *overlapWatch) drop(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.hosts, name)
}

func (w *overlapWatch) check(t *testing.T) {
	t.Helper()
	w.stop()
	<-w.done
	for _, s := range w.seen {
		t.Error("overlap:", s)
	}
}

func exactlyOnce(hosts map[string]*running, n int) bool {
	wh := where(hosts)
	if len(wh) != n {
		return false
	}
	for _, hs := range wh {
		if len(hs) != 1 {
			return false
		}
	}
	return true
}

// TestClusterDaemons runs three daemons as one cluster on embedded etcd:
// each of 24 real agents runs on exactly one; a daemon that stops hands
// its agents to the others; a daemon cut off from etcd stops its agents
// (its /readyz fails) and the others run them after its lease expired;
// /v1/cluster's view agrees.
func TestClusterDaemons(t *testing.T) {
	const n = 24
	e := etcdtest.Start(t, 1)
	proxy := etcdtest.NewProxy(t, e.Endpoint(0))
	hosts := map[string]*running{}
	for _, name := range []string{"a", "b", "c"} {
		eps := e.Endpoints()
		if name == "c" {
			eps = []string{proxy.URL()}
		}
		dir := filepath.Join(t.TempDir(), name)
		path := writeConfig(t, mkdir(t, dir), clusterConfig(t, name, eps, n))
		var opts []Options
		if name == "a" {
			opts = append(opts, Options{Metrics: true})
		}
		hosts[name] = serve(t, path, opts...)
	}
	mtr := hosts["a"].d.Metrics()
	ctl := controlOf(t, hosts["a"].d, mtr)
	testenv.Eventually(t, 60*time.Second, "every agent running once", func() bool { return exactlyOnce(hosts, n) })
	testenv.Eventually(t, 30*time.Second, "every host ready", func() bool {
		return hosts["a"].d.Ready() && hosts["b"].d.Ready() && hosts["c"].d.Ready()
	})
	w := watchOverlaps(map[string]*running{"a": hosts["a"], "b": hosts["b"], "c": hosts["c"]})
	// The view over the control API, as `ps --cluster` reads it.
	var st control.ClusterStatus
	testenv.Eventually(t, 10*time.Second, "a's view of 3 members publishing 24 agents", func() bool {
		var err error
		st, err = ctl.Cluster(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		published := 0
		for _, m := range st.Members {
			published += len(m.Agents)
		}
		return len(st.Members) == 3 && len(st.Owners) == n && published == n
	})
	if ready, err := ctl.Ready(t.Context()); err != nil || !ready {
		t.Errorf("a's /readyz: %v, %v", ready, err)
	}
	text, err := ctl.Metrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`toolhostd_cluster_members{member="a"} 3`, `toolhostd_cluster_joined{member="a"} 1`,
		fmt.Sprintf(`toolhostd_cluster_owned_agents{member="a"} %d`, len(st.Owned))} {
		if !strings.Contains(string(text), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	for _, m := range st.Members {
		if !m.SameConfig == (m.Digest == st.Digest) {
			t.Errorf("member %s: same_config %v with digests %s / %s", m.Name, m.SameConfig, m.Digest, st.Digest)
		}
	}
	if err := hosts["a"].d.StartAgent(notOn(hosts, "a")); err == nil {
		t.Error("a started an agent placed on another host")
	}

	// b stops: its agents run on a and c.
	hosts["b"].stop(t)
	w.drop("b")
	delete(hosts, "b")
	testenv.Eventually(t, 30*time.Second, "b's agents on a and c", func() bool { return exactlyOnce(hosts, n) })

	// c is cut off from etcd: it fences, a takes everything.
	cut := time.Now()
	proxy.Cut()
	testenv.Eventually(t, 2*time.Second, "c fenced", func() bool {
		for _, hs := range where(map[string]*running{"c": hosts["c"]}) {
			if len(hs) > 0 {
				return false
			}
		}
		return true
	})
	fenced := time.Since(cut)
	if hosts["c"].d.Ready() {
		t.Error("c ready while cut off")
	}
	testenv.Eventually(t, 30*time.Second, "every agent on a", func() bool {
		return exactlyOnce(hosts, n) && len(where(map[string]*running{"a": hosts["a"]})) == n
	})
	if st, _ := hosts["c"].d.Cluster(); st.Fences == 0 {
		t.Error("c counted no fence")
	}
	t.Logf("c fenced %s after the cut; a ran every agent %s after it", fenced.Round(time.Millisecond), time.Since(cut).Round(time.Millisecond))
	w.check(t)
}

// notOn is some agent that host does not run.
func notOn(hosts map[string]*running, host string) string {
	for a, hs := range where(hosts) {
		if hs[0] != host {
			return a
		}
	}
	return ""
}

func mkdir(t testing.TB, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// controlOf serves d's control API on a unix socket until the test ends
// and returns a client of it.
func controlOf(t *testing.T, d *Daemon, m *metrics.Metrics) *control.Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "i18ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	srv, err := control.NewServer(control.Options{Backend: d, Gatherer: m.Registry(), Socket: filepath.Join(dir, "ctl.sock")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-srv.Listening()
	c, err := control.Dial(srv.Socket())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
