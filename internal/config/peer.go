package config

// The [peer.<name>] tables: remote A2A agents that local agents may send
// to by name, like local ones (their sends_to applies).

import (
	"fmt"
	"net/url"
)

// Peer is one [peer.<name>] table. A2A and Token may hold ${env:...} /
// ${file:...} references: call Expanded at use, never log the token.
type Peer struct {
	Name string `toml:"-"`
	// A2A is the URL of the remote agent's card
	// (https://host/.../.well-known/agent-card.json).
	A2A string `toml:"a2a"`
	// Token, when set, is sent as a bearer token with every request.
	Token string `toml:"token,omitempty"`
}

// Expanded returns a copy of p with its references resolved. Its errors
// name the key and the reference, never a value.
func (p *Peer) Expanded() (*Peer, error) {
	c := *p
	var err error
	if c.A2A, err = Expand(p.A2A); err != nil {
		return nil, fmt.Errorf("peer %s: a2a: %w", p.Name, err)
	}
	if c.Token, err = Expand(p.Token); err != nil {
		return nil, fmt.Errorf("peer %s: token: %w", p.Name, err)
	}
	return &c, nil
}

// peers decodes the [peer] table; a peer's name is a send target, so it
// must not also name an agent.
func (d *decoder) peers(path []string, v any, agents map[string]any) map[string]*Peer {
	m, ok := d.asTable(path, v)
	if !ok {
		return nil
	}
	out := map[string]*Peer{}
	for _, name := range sortedKeys(m) {
		p := child(path, name)
		if !validName(name) {
			d.errAt(p, "invalid peer name: use 1 to 64 letters, digits, '-' and '_'")
		}
		if _, ok := agents[name]; ok {
			d.errAt(p, "%q names both an [agent.%s] and a [peer.%s]: agents and peers share one namespace (a send names one of them)", name, name, name)
		}
		if pr := d.peer(p, name, m[name]); pr != nil {
			out[name] = pr
		}
	}
	return out
}

func (d *decoder) peer(path []string, name string, v any) *Peer {
	m, ok := d.asTable(path, v)
	if !ok {
		return nil
	}
	pr := &Peer{Name: name}
	d.fields(path, m, handlers{
		"a2a": func(p []string, v any) {
			s, ok := d.asRefString(p, v)
			if !ok {
				return
			}
			if !HasRefs(s) {
				if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					d.errAt(p, "invalid url: want the http:// or https:// URL of the agent's card")
					return
				}
			}
			pr.A2A = s
		},
		"token": func(p []string, v any) {
			s, ok := d.asRefString(p, v)
			if ok && s != "" && !HasRefs(s) {
				// The message must not quote s: it may be the token.
				d.errAt(p, "must be a reference such as \"${env:PEER_TOKEN}\" or \"${file:/run/secrets/peer}\": a token is never written in the config")
				return
			}
			pr.Token = s
		},
	})
	if _, ok := m["a2a"]; !ok {
		d.errAt(path, "missing a2a: the URL of the remote agent's card")
	}
	return pr
}
