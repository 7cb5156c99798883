package config

// The [host] mcp and a2a tables: where the agents exposed over MCP and
// A2A are served.

import (
	"net"
	"net/url"
	"strings"
)

// Paths the protocol endpoints are served at on their listener.
const (
	MCPPath = "/mcp"
	A2APath = "/a2a"
)

// Endpoint is [host] mcp or [host] a2a. Token keeps its ${env:...} /
// ${file:...} reference: call Expand at use.
type Endpoint struct {
	// Listen is the TCP address (host:port); mcp and a2a may share one.
	Listen string `toml:"listen"`
	// Token is the bearer token every request must carry; it may be left
	// out only when Listen is loopback-only.
	Token string `toml:"token,omitempty"`
	// URL is the endpoint's root as clients reach it (A2A cards name it;
	// default http://LISTEN/a2a).
	URL string `toml:"url,omitempty"`
}

// IsLoopback reports whether addr (host:port, or a host) only listens on
// loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// endpoint decodes [host] mcp or a2a (name).
func (d *decoder) endpoint(path []string, v any, name string) *Endpoint {
	m, ok := d.asTable(path, v)
	if !ok {
		return nil
	}
	e := &Endpoint{}
	d.fields(path, m, handlers{
		"listen": func(p []string, v any) {
			s, ok := d.asPlainString(p, v)
			if !ok {
				return
			}
			if msg := checkListen(s); msg != "" {
				d.errAt(p, "%s", msg)
				return
			}
			e.Listen = s
		},
		"token": func(p []string, v any) {
			s, ok := d.asRefString(p, v)
			if ok && s != "" && !HasRefs(s) {
				// The message must not quote s: it may be the token.
				d.errAt(p, "must be a reference such as \"${env:TOOLHOSTD_%s_TOKEN}\" or \"${file:/run/secrets/%s}\": a token is never written in the config", strings.ToUpper(name), name)
				return
			}
			e.Token = s
		},
		"url": func(p []string, v any) {
			if name != "a2a" {
				d.errAt(p, "only for [host] a2a (its cards name it)")
				return
			}
			s, ok := d.asPlainString(p, v)
			if !ok {
				return
			}
			if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				d.errAt(p, "invalid url: want http:// or https:// and a host")
				return
			}
			e.URL = strings.TrimSuffix(s, "/")
		},
	})
	switch _, ok := m["listen"]; {
	case !ok:
		d.errAt(path, "missing listen: the host:port to serve %s on", name)
	case e.Listen != "" && e.Token == "" && !IsLoopback(e.Listen) && !d.erred(child(path, "token"), 0):
		d.errAt(child(path, "listen"), "needs token: %s is served without a bearer token only on a loopback address", name)
	}
	if name == "a2a" && e.URL == "" && e.Listen != "" {
		e.URL = "http://" + e.Listen + A2APath
	}
	return e
}
