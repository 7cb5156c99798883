// Package endpoints serves a host's agents over the agent protocols:
// those with expose = ["mcp"] as tools of an MCP server ([host] mcp),
// those with expose = ["a2a"] as A2A agents ([host] a2a), on one HTTP
// server per listen address (the two may share one), and holds the
// [peer.*] remote A2A agents that a send reaches. Expose applies a
// reload's exposure (MCP clients get tools/list_changed); the listeners
// and peers change at a restart.
package endpoints

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
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/peer"
)

// Options are what New serves.
type Options struct {
	// Config names the endpoints ([host] mcp, a2a), the exposed agents and
	// the peers.
	Config *config.Config
	// Router is where the endpoints send their messages.
	Router *message.Router
	// Version is toolhostd's version, as the MCP handshake and A2A cards
	// name it.
	Version string
	// Log is the endpoints' logger.
	Log *zap.Logger
}

// Endpoints are a host's protocol endpoints and peers.
type Endpoints struct {
	log     *zap.Logger
	cat     *expose.Static
	mcp     *mcpserve.Server
	a2a     *a2aserve.Server
	servers map[string]*http.Server // by listen address
	lns     map[string]net.Listener
	peers   map[string]*peer.Peer
	wg      sync.WaitGroup
	stop    sync.Once
}

// New builds the endpoints and peers of o.Config and binds their
// listeners (a bad address fails New, not later); on an error what it
// made is closed.
func New(o Options) (_ *Endpoints, err error) {
	log := o.Log
	if log == nil {
		log = zap.NewNop()
	}
	cfg, version := o.Config, o.Version
	p := &Endpoints{log: log, cat: expose.NewStatic(expose.FromConfig(cfg)), servers: map[string]*http.Server{},
		lns: map[string]net.Listener{}, peers: map[string]*peer.Peer{}}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
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
			return nil, fmt.Errorf("host.mcp.token: %w", err)
		}
		_, mux, err := bound(e.Listen)
		if err != nil {
			return nil, err
		}
		if p.mcp, err = mcpserve.New(mcpserve.Options{Router: o.Router, Catalog: p.cat, Listen: e.Listen, Token: token, Version: version, Log: log}); err != nil {
			return nil, err
		}
		mux.Handle(config.MCPPath, p.mcp)
	}
	if e := cfg.Host.A2A; e != nil {
		token, err := config.Expand(e.Token)
		if err != nil {
			return nil, fmt.Errorf("host.a2a.token: %w", err)
		}
		addr, mux, err := bound(e.Listen)
		if err != nil {
			return nil, err
		}
		base := e.URL
		if base == "" {
			base = "http://" + addr + config.A2APath
		}
		if p.a2a, err = a2aserve.New(a2aserve.Options{Router: o.Router, Catalog: p.cat, BaseURL: base, Listen: e.Listen, Token: token,
			Retention: cfg.Host.MessageRetention.Duration, Version: version, Log: log}); err != nil {
			return nil, err
		}
		mux.Handle(config.A2APath+"/", http.StripPrefix(config.A2APath, p.a2a))
	}
	for addr, m := range muxes {
		p.servers[addr] = &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second, ErrorLog: zap.NewStdLog(log.WithOptions(zap.IncreaseLevel(zap.WarnLevel)))}
	}
	for name, pc := range cfg.Peer {
		x, err := pc.Expanded()
		if err != nil {
			return nil, err
		}
		pr, err := peer.New(peer.Options{Name: name, CardURL: x.A2A, Token: x.Token, Log: log})
		if err != nil {
			return nil, fmt.Errorf("peer.%s: %w", name, err)
		}
		p.peers[name] = pr
	}
	return p, nil
}

// Serve serves the endpoints until Close.
func (p *Endpoints) Serve() {
	addrs := make([]string, 0, len(p.servers))
	for addr, srv := range p.servers {
		ln := p.lns[addr]
		addrs = append(addrs, ln.Addr().String())
		p.wg.Go(func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				p.log.Error("protocol endpoint failed", zap.String("listen", addr), zap.Error(err))
			}
		})
	}
	if len(addrs) > 0 {
		sort.Strings(addrs)
		p.log.Info("protocol endpoints listening", zap.Strings("listen", addrs), zap.Bool("mcp", p.mcp != nil), zap.Bool("a2a", p.a2a != nil))
	}
}

// Close stops the endpoints (their requests end; the messages they sent
// go on) and closes the peers. Idempotent.
func (p *Endpoints) Close() { p.stop.Do(p.close) }

func (p *Endpoints) close() {
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

// Expose applies cfg's exposure (agents added, removed, described anew).
func (p *Endpoints) Expose(cfg *config.Config) { p.cat.Set(expose.FromConfig(cfg)) }

// Peer is the [peer.<name>] of that name, if configured.
func (p *Endpoints) Peer(name string) (*peer.Peer, bool) {
	pr, ok := p.peers[name]
	return pr, ok
}

// Addrs are the bound addresses of the endpoints (for tests with port 0).
func (p *Endpoints) Addrs() []string {
	out := make([]string, 0, len(p.lns))
	for _, ln := range p.lns {
		out = append(out, ln.Addr().String())
	}
	sort.Strings(out)
	return out
}
