//lint:file-ignore SA1019 the MCP 2025-11-25 features servers ask for (roots, sampling, logging) are deprecated only from protocol 2026-07-28, which toolhostd does not speak (DefaultProtocolVersion)

package mcpclient

import (
	"net/url"
	"path"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Roots: tooling.X.roots (file:// URIs; config makes paths URIs, relative
// ones against the config's directory) are advertised with the roots
// capability and answered on roots/list. A tooling without roots offers
// no roots capability, so a server falls back to its own configuration
// instead of being told "no roots".

// offerRoots gives the client the configured roots.
func (m *Client) offerRoots() { m.client.AddRoots(configRoots(m.cfg.Roots)...) }

// configRoots converts the configured root URIs, naming each after the
// last element of its path.
func configRoots(uris []string) []*mcp.Root {
	out := make([]*mcp.Root, 0, len(uris))
	for _, u := range uris {
		r := &mcp.Root{URI: u}
		if pu, err := url.Parse(u); err == nil && pu.Path != "" {
			if base := path.Base(pu.Path); base != "/" && base != "." {
				r.Name = base
			}
		}
		out = append(out, r)
	}
	return out
}
