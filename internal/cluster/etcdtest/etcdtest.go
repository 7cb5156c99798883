// Package etcdtest runs real etcd members inside a test process (etcd's
// embed package) on loopback, and a TCP proxy in front of a client URL
// that the test can cut. Only tests import it: the toolhostd binary does
// not link the etcd server.
package etcdtest

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/cluster"
)

// LeakOptions are the goleak options of a package whose tests run
// embedded members: the members' peer connections (rafthttp over
// net/http) outlive a stopped member by a moment, and grpc keeps
// process-wide goroutines. Use them only where nothing else of the
// package serves or dials HTTP.
func LeakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*conn).serve"),
		goleak.IgnoreAnyFunction("net/http.(*connReader).backgroundRead"),
	}
}

// Cluster is n embedded members.
type Cluster struct {
	t       testing.TB
	cfgs    []*embed.Config
	members []*embed.Etcd // nil: stopped
	mu      sync.Mutex
}

// Start runs n members (1 or 3, typically) with fresh data directories in
// t.TempDir(); they stop when the test ends.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	var initial []string
	for i := range n {
		peer, client := freeURL(t), freeURL(t)
		cfg := memberConfig(fmt.Sprintf("m%d", i), t.TempDir(), peer, client)
		cfg.TickMs, cfg.ElectionMs = 50, 500
		initial = append(initial, cfg.Name+"="+peer.String())
		c.cfgs = append(c.cfgs, cfg)
	}
	for _, cfg := range c.cfgs {
		cfg.InitialCluster = strings.Join(initial, ",")
	}
	c.members = make([]*embed.Etcd, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { c.members[i], errs[i] = c.start(i) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			c.Close()
			t.Fatal(err)
		}
	}
	t.Cleanup(c.Close)
	return c
}

// memberConfig is the config of a quiet member on loopback that does not
// fsync, with etcd's default timing.
func memberConfig(name, dir string, peer, client url.URL) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = name, dir
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync = true
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.InitialClusterToken = "toolhostd-test"
	return cfg
}

func (c *Cluster) start(i int) (*embed.Etcd, error) {
	e, err := embed.StartEtcd(c.cfgs[i])
	if err != nil {
		return nil, fmt.Errorf("start etcd member %d: %w", i, err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case <-time.After(20 * time.Second):
		e.Close()
		return nil, fmt.Errorf("etcd member %d not ready in 20s", i)
	}
}

// freeURL is an http URL on a loopback port free now.
func freeURL(t testing.TB) url.URL {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return url.URL{Scheme: "http", Host: addr}
}

// Endpoints are the members' client URLs.
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, cfg := range c.cfgs {
		out = append(out, cfg.AdvertiseClientUrls[0].String())
	}
	return out
}

// Endpoint is member i's client URL.
func (c *Cluster) Endpoint(i int) string { return c.cfgs[i].AdvertiseClientUrls[0].String() }

// Stop stops member i (its data stays for Restart).
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	e := c.members[i]
	c.members[i] = nil
	c.mu.Unlock()
	if e != nil {
		e.Close()
	}
}

// Restart starts a stopped member i again on its data (a member of three
// waits for a quorum to be ready: restart them together).
func (c *Cluster) Restart(i int) error {
	cfg := c.cfgs[i]
	cfg.ClusterState = embed.ClusterStateFlagExisting
	e, err := c.start(i)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.members[i] = e
	c.mu.Unlock()
	return nil
}

// Close stops every member.
func (c *Cluster) Close() {
	for i := range c.members {
		c.Stop(i)
	}
}

// Client is a client of endpoints, closed when the test ends.
func Client(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialKeepAliveTime: time.Second, DialKeepAliveTimeout: time.Second,
		DialOptions: cluster.DialOptions(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// Proxy forwards TCP connections from a loopback port to a target
// address until Cut; Restore lets them through again.
type Proxy struct {
	l        net.Listener
	target   string
	up, down time.Duration // added latency, see Latency

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// ProxyOption configures a Proxy.
type ProxyOption func(*Proxy)

// Latency delays every byte by up on its way to the target and by down on
// its way back (a slow network path; throughput is not limited).
func Latency(up, down time.Duration) ProxyOption {
	return func(p *Proxy) { p.up, p.down = up, down }
}

// NewProxy proxies to target (host:port or an http URL); it stops when
// the test ends.
func NewProxy(t testing.TB, target string, opts ...ProxyOption) *Proxy {
	t.Helper()
	if u, err := url.Parse(target); err == nil && u.Host != "" {
		target = u.Host
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{l: l, target: target, conns: map[net.Conn]bool{}}
	for _, o := range opts {
		o(p)
	}
	p.wg.Go(p.accept)
	t.Cleanup(p.Close)
	return p
}

// URL is the proxy's http URL.
func (p *Proxy) URL() string { return "http://" + p.l.Addr().String() }

func (p *Proxy) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.mu.Unlock()
		up, err := net.DialTimeout("tcp", p.target, time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(c, up, p.down) })
		p.wg.Go(func() { p.pipe(up, c, p.up) })
	}
}

// pipe copies src to dst, each chunk delay after it was read, then closes
// both.
func (p *Proxy) pipe(dst, src net.Conn, delay time.Duration) {
	if delay > 0 {
		p.delayed(dst, src, delay)
	} else {
		_, _ = io.Copy(dst, src)
	}
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// chunk is bytes read from a connection, due at the other end at at.
type chunk struct {
	at time.Time
	b  []byte
}

// delayed is io.Copy through a delay line: a reader stamps each chunk
// with its due time, a writer holds it until then.
func (p *Proxy) delayed(dst, src net.Conn, delay time.Duration) {
	line := make(chan chunk, 1024)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTimer(0)
		defer t.Stop()
		for c := range line {
			if wait := time.Until(c.at); wait > 0 {
				t.Reset(wait)
				<-t.C
			}
			if _, err := dst.Write(c.b); err != nil {
				_ = src.Close() // the reader ends; drain what it queued
				for range line {
				}
				return
			}
		}
	})
	for {
		b := make([]byte, 32<<10)
		n, err := src.Read(b)
		if n > 0 {
			line <- chunk{at: time.Now().Add(delay), b: b[:n]}
		}
		if err != nil {
			break
		}
	}
	close(line)
	wg.Wait()
}

// Cut closes every connection and refuses new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// Close stops the proxy and its connections.
func (p *Proxy) Close() {
	_ = p.l.Close()
	p.Cut()
	p.wg.Wait()
}
