package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// Message benchmarks (make bench): a message's round trip through the
// control socket to a real echo agent, against a bare net/http echo
// handler on a unix socket; the first reply of a new per-session instance
// (its start included) against a reply of a warm one; messages per second
// with 100 sessions against one; the memory of idle per-session
// instances (TOOLHOSTD_BENCH_AGENTS of them, default 100); and a message
// forwarded by the cluster host that does not run its agent against one
// sent to the host that does.

// unixClient is an HTTP client of the socket at path.
func unixClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		},
		MaxIdleConnsPerHost: 256,
	}}
}

// post sends one message and checks the reply.
func post(b *testing.B, hc *http.Client, url, body, want string) {
	resp, err := hc.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(data), want) {
		b.Fatalf("%s: %d %s (%v)", url, resp.StatusCode, data, err)
	}
}

// report puts the p50 and p99 of lat into b's metrics.
func report(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Nanoseconds()), "p99-ns")
}

// messageDaemon serves cfg's agents with the control API on a socket and
// returns a client of it.
func messageDaemon(b *testing.B, agents string) *http.Client {
	b.Helper()
	return messageDaemonHost(b, "", agents)
}

// messageDaemonHost is messageDaemon with more [host] keys.
func messageDaemonHost(b *testing.B, host, agents string) *http.Client {
	b.Helper()
	dir := b.TempDir()
	r := serve(b, writeConfig(b, dir, header(b)+host+"\n"+agents))
	sock := filepath.Join(dir, "c.sock")
	srv, err := control.NewServer(control.Options{Backend: r.d, Messages: r.d.Messages(), Socket: sock})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
	<-srv.Listening()
	return unixClient(sock)
}

// BenchmarkMessageTraced is a message's round trip to the echo agent
// (componentize-js) on three daemons at once, their messages interleaved
// so that they share the machine's noise: tracing off (the baseline), on
// and sampled (its invoke_agent span kept in memory and exported over
// OTLP/HTTP to a local collector that takes it), on but unsampled
// (sampler ratio 0), and on and kept in memory only (traces = {}). It
// reports each one's p50 and its difference to the baseline's
// (delta-sampled-ns, ...).
func BenchmarkMessageTraced(b *testing.B) {
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	agents := fmt.Sprintf("[agent.echo]\ncomponent = %q\n", testenv.Agent(b, "agents", "echo"))
	variants := []struct{ name, host string }{
		{"off", ""},
		{"sampled", fmt.Sprintf("traces = { endpoint = %q }\n", collector.URL+"/v1/traces")},
		{"unsampled", "traces = { sampler_ratio = 0.0 }\n"},
		{"kept", "traces = {}\n"},
	}
	clients := make([]*http.Client, len(variants))
	lat := make([][]time.Duration, len(variants))
	for i, v := range variants {
		clients[i] = messageDaemonHost(b, v.host, agents)
		post(b, clients[i], "http://toolhostd/v1/agents/echo/messages", `{"content":"warm"}`, "echo: warm")
	}
	b.ResetTimer()
	round := 0
	for b.Loop() {
		for j := range clients { // each round starts at the next one: no place in the order is favoured
			i := (round + j) % len(clients)
			start := time.Now()
			post(b, clients[i], "http://toolhostd/v1/agents/echo/messages", `{"content":"hi"}`, "echo: hi")
			lat[i] = append(lat[i], time.Since(start))
		}
		round++
	}
	testenv.ReportDeltas(b, []string{"off", "sampled", "unsampled", "kept"}, lat)
}

func BenchmarkMessageRoundTrip(b *testing.B) {
	b.Run("baseline", func(b *testing.B) {
		sock := filepath.Join(b.TempDir(), "echo.sock")
		l, err := net.Listen("unix", sock)
		if err != nil {
			b.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var in struct{ Content string }
			_ = json.NewDecoder(r.Body).Decode(&in)
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]string{"status": "done", "reply": "echo: " + in.Content})
		})}
		go func() { _ = srv.Serve(l) }()
		b.Cleanup(func() { _ = srv.Close() })
		hc := unixClient(sock)
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for b.Loop() {
			start := time.Now()
			post(b, hc, "http://bench/v1/agents/echo/messages", `{"content":"hi"}`, "echo: hi")
			lat = append(lat, time.Since(start))
		}
		report(b, lat)
	})
	for _, dir := range []string{"agents-qjs", "agents"} {
		b.Run("echo-"+dir, func(b *testing.B) {
			hc := messageDaemon(b, fmt.Sprintf("[agent.echo]\ncomponent = %q\n", testenv.Agent(b, dir, "echo")))
			post(b, hc, "http://toolhostd/v1/agents/echo/messages", `{"content":"warm"}`, "echo: warm")
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				post(b, hc, "http://toolhostd/v1/agents/echo/messages", `{"content":"hi"}`, "echo: hi")
				lat = append(lat, time.Since(start))
			}
			report(b, lat)
		})
	}
}

// perSession is a per-session echo agent (componentize-qjs) with room for
// n instances.
func perSession(b *testing.B, n int) string {
	return fmt.Sprintf("[agent.chat]\ncomponent = %q\ninstances = \"per-session\"\nmax_instances = %d\nidle_timeout = \"1h\"\ninbox_capacity = 4096\n",
		testenv.Agent(b, "agents-qjs", "echo"), n)
}

func BenchmarkMessageFirstReply(b *testing.B) {
	for _, warm := range []bool{true, false} {
		name := "new-session"
		if warm {
			name = "baseline"
		}
		b.Run(name, func(b *testing.B) {
			hc := messageDaemon(b, perSession(b, b.N+2))
			post(b, hc, "http://toolhostd/v1/agents/chat/messages", `{"content":"warm","session":"w"}`, "echo: warm")
			lat := make([]time.Duration, 0, b.N)
			i := 0
			b.ResetTimer()
			for b.Loop() {
				session := "w"
				if !warm {
					i++
					session = "s" + strconv.Itoa(i)
				}
				start := time.Now()
				post(b, hc, "http://toolhostd/v1/agents/chat/messages", `{"content":"hi","session":"`+session+`"}`, "echo: hi")
				lat = append(lat, time.Since(start))
			}
			report(b, lat)
		})
	}
}

func BenchmarkMessageThroughput(b *testing.B) {
	for _, sessions := range []int{1, 100} {
		name := "sessions-100"
		if sessions == 1 {
			name = "baseline"
		}
		b.Run(name, func(b *testing.B) {
			hc := messageDaemon(b, perSession(b, sessions))
			for s := range sessions { // start every instance first
				post(b, hc, "http://toolhostd/v1/agents/chat/messages", fmt.Sprintf(`{"content":"warm","session":"s%d"}`, s), "echo: warm")
			}
			var wg sync.WaitGroup
			per := max(b.N/sessions, 1)
			b.ResetTimer()
			start := time.Now()
			for s := range sessions {
				wg.Go(func() {
					for range per {
						post(b, hc, "http://toolhostd/v1/agents/chat/messages", fmt.Sprintf(`{"content":"hi","session":"s%d"}`, s), "echo: hi")
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(per*sessions)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

// BenchmarkIdleInstances starts TOOLHOSTD_BENCH_AGENTS sessions of a
// per-session agent and reports the process's PSS per idle instance (what
// the daemon holds more with them than without).
func BenchmarkIdleInstances(b *testing.B) {
	n := 100
	if s := os.Getenv("TOOLHOSTD_BENCH_AGENTS"); s != "" {
		if v, err := strconv.Atoi(s); err == nil && v > 0 {
			n = v
		}
	}
	for range b.N {
		b.StopTimer()
		hc := messageDaemon(b, perSession(b, n))
		post(b, hc, "http://toolhostd/v1/agents/chat/messages", `{"content":"warm","session":"w"}`, "echo: warm")
		before := pss(b)
		b.StartTimer()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 32)
		for i := range n - 1 {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				post(b, hc, "http://toolhostd/v1/agents/chat/messages", fmt.Sprintf(`{"content":"hi","session":"s%d"}`, i), "echo: hi")
			})
		}
		wg.Wait()
		b.StopTimer()
		b.ReportMetric((pss(b)-before)/float64(n-1), "pss-B/instance")
		b.StartTimer()
	}
}

// pss is the process's proportional set size in bytes.
func pss(b *testing.B) float64 {
	f, err := os.Open("/proc/self/smaps_rollup")
	if err != nil {
		b.Skipf("no smaps_rollup: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) >= 2 && fs[0] == "Pss:" {
			kb, _ := strconv.ParseFloat(fs[1], 64)
			return kb * 1024
		}
	}
	b.Fatal("no Pss line in smaps_rollup")
	return 0
}

// BenchmarkMessageForwarded: a message's round trip to a real echo agent
// (componentize-qjs) of a two-host cluster on an embedded etcd, through
// the TCP control API: sent to the host that runs it (the baseline), and
// to the other host, which forwards it to the owner's control API and
// relays the reply.
func BenchmarkMessageForwarded(b *testing.B) {
	e := etcdtest.Start(b, 1)
	agents := fmt.Sprintf("[agent.echo]\ncomponent = %q\n", testenv.Agent(b, "agents-qjs", "echo"))
	hosts := []*fwdHost{startFwdHost(b, "a", e.Endpoints(), agents), startFwdHost(b, "b", e.Endpoints(), agents)}
	settled(b, hosts)
	owner := ownerOf(b, hosts, "echo")
	for _, tc := range []struct {
		name string
		via  *fwdHost
	}{{"baseline", owner}, {"forwarded", other(hosts, owner)}} {
		b.Run(tc.name, func(b *testing.B) {
			send := func(content string) {
				st, err := tc.via.ctl.Send(b.Context(), "echo", content, control.SendOptions{})
				if err != nil || st.Reply != "echo: "+content {
					b.Fatalf("through %s: %+v, %v", tc.via.name, st, err)
				}
			}
			send("warm")
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				send("hi")
				lat = append(lat, time.Since(start))
			}
			report(b, lat)
		})
	}
}
