package daemon

// The protocol endpoints (issue 35): the agents with expose = ["mcp"] as
// tools of an MCP server, those with expose = ["a2a"] as A2A agents, on
// the [host] mcp and a2a listeners (one HTTP server per address: the two
// may share one), and the [peer.*] remote A2A agents as targets of send.
// A reload updates which agents are exposed (MCP clients get
// tools/list_changed); the listeners and peers change at a restart.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/a2aserve"
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/expose"
	"github.com/toolhostd/toolhostd/internal/mcpserve"
	"github.com/toolhostd/toolhostd/internal/peer"
)

// protocols are the daemon's protocol endpoints and peers.
type protocols struct {
	cat     *expose.Static
	mcp     *mcpserve.Server
	a2a     *a2aserve.Server
	servers map[string]*http.Server // by listen address
	lns     map[string]net.Listener
	peers   map[string]*peer.Peer
	wg      sync.WaitGroup
	stop    sync.Once
}

// setupProtocols builds the endpoints and peers of cfg and binds their
// listeners (a bad address fails New, not later).
func (d *Daemon) setupProtocols(cfg *config.Config, version string) error {
	p := &protocols{cat: expose.NewStatic(expose.FromConfig(cfg)), servers: map[string]*http.Server{},
		lns: map[string]net.Listener{}, peers: map[string]*peer.Peer{}}
	d.protos = p
	log := d.baseLog
	// Bind first: a card names the bound address (listen may say port 0).
	muxes := map[string]*http.ServeMux{}
	bound := func(addr string) (string, *http.ServeMux, error) {
		if muxes[addr] == nil {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return "", nil, fmt.Errorf("protocol endpoints: %w", err)
			}
			p.lns[addr], muxes[addr] = ln, http.NewServeMux()
		}
		return p.lns[addr].Addr().String(), muxes[addr], nil
	}
	if e := cfg.Host.MCP; e != nil {
		token, err := config.Expand(e.Token)
		if err != nil {
			return fmt.Errorf("host.mcp.token: %w", err)
		}
		_, mux, err := bound(e.Listen)
		if err != nil {
			return err
		}
		if p.mcp, err = mcpserve.New(mcpserve.Options{Router: d.router, Catalog: p.cat, Listen: e.Listen, Token: token, Version: version, Log: log}); err != nil {
			return err
		}
		mux.Handle(config.MCPPath, p.mcp)
	}
	if e := cfg.Host.A2A; e != nil {
		token, err := config.Expand(e.Token)
		if err != nil {
			return fmt.Errorf("host.a2a.token: %w", err)
		}
		addr, mux, err := bound(e.Listen)
		if err != nil {
			return err
		}
		base := e.URL
		if base == "" {
			base = "http://" + addr + config.A2APath
		}
		if p.a2a, err = a2aserve.New(a2aserve.Options{Router: d.router, Catalog: p.cat, BaseURL: base, Listen: e.Listen, Token: token,
			Retention: cfg.Host.MessageRetention.Duration, Version: version, Log: log}); err != nil {
			return err
		}
		mux.Handle(config.A2APath+"/", http.StripPrefix(config.A2APath, p.a2a))
	}
	for addr, m := range muxes {
		p.servers[addr] = &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second, ErrorLog: zap.NewStdLog(d.log.WithOptions(zap.IncreaseLevel(zap.WarnLevel)))}
	}
	for name, pc := range cfg.Peer {
		x, err := pc.Expanded()
		if err != nil {
			return err
		}
		pr, err := peer.New(peer.Options{Name: name, CardURL: x.A2A, Token: x.Token, Log: log})
		if err != nil {
			return fmt.Errorf("peer.%s: %w", name, err)
		}
		p.peers[name] = pr
	}
	return nil
}

// serveProtocols serves the endpoints until stopProtocols.
func (d *Daemon) serveProtocols() {
	p := d.protos
	addrs := make([]string, 0, len(p.servers))
	for addr, srv := range p.servers {
		ln := p.lns[addr]
		addrs = append(addrs, ln.Addr().String())
		p.wg.Go(func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				d.log.Error("protocol endpoint failed", zap.String("listen", addr), zap.Error(err))
			}
		})
	}
	if len(addrs) > 0 {
		sort.Strings(addrs)
		d.log.Info("protocol endpoints listening", zap.Strings("listen", addrs), zap.Bool("mcp", p.mcp != nil), zap.Bool("a2a", p.a2a != nil))
	}
}

// stopProtocols stops the endpoints (their requests end; the messages
// they sent go on) and closes the peers. Idempotent.
func (d *Daemon) stopProtocols() {
	if p := d.protos; p != nil {
		p.stop.Do(func() { d.closeProtocols(p) })
	}
}

func (d *Daemon) closeProtocols(p *protocols) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range p.servers {
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
	}
	for addr, ln := range p.lns {
		ln.Close() // never served: Shutdown does not close it
		delete(p.lns, addr)
	}
	p.wg.Wait()
	if p.mcp != nil {
		p.mcp.Close()
	}
	if p.a2a != nil {
		p.a2a.Close()
	}
	for _, pr := range p.peers {
		pr.Close()
	}
}

// reloadProtocols applies cfg's exposure (agents added, removed, described
// anew).
func (d *Daemon) reloadProtocols(cfg *config.Config) {
	if p := d.protos; p != nil {
		p.cat.Set(expose.FromConfig(cfg))
	}
}

// peer is the [peer.<name>] of that name, if configured.
func (d *Daemon) peer(name string) (*peer.Peer, bool) {
	if d.protos == nil {
		return nil, false
	}
	pr, ok := d.protos.peers[name]
	return pr, ok
}

// ProtocolAddrs are the bound addresses of the protocol endpoints (for
// tests with port 0).
func (d *Daemon) ProtocolAddrs() []string {
	var out []string
	if d.protos != nil {
		for _, ln := range d.protos.lns {
			out = append(out, ln.Addr().String())
		}
	}
	sort.Strings(out)
	return out
}
