package mcpclient

import (
	"errors"
	"fmt"
	"sort"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Registry holds the configured toolings by name.
type Registry struct {
	byName map[string]tooling.Tooling
	names  []string
}

// NewRegistry builds one Tooling per [tooling.<name>] entry (the map key is
// the name). It does not connect: run each tooling's Serve under a
// supervisor. o applies to every MCP tooling.
func NewRegistry(cfgs map[string]*config.Tooling, log *zap.Logger, o Options) (*Registry, error) {
	r := &Registry{byName: make(map[string]tooling.Tooling, len(cfgs))}
	var errs []error
	for name, cfg := range cfgs {
		if cfg == nil {
			errs = append(errs, fmt.Errorf("tooling %q: no config", name))
			continue
		}
		c := *cfg
		c.Name = name
		switch c.Kind {
		case tooling.KindMCP, "":
			m, err := New(&c, log, o)
			if err != nil {
				errs = append(errs, fmt.Errorf("tooling %q: %w", name, err))
				continue
			}
			r.byName[name] = m
		default:
			errs = append(errs, fmt.Errorf("tooling %q: unknown kind %q", name, c.Kind))
			continue
		}
		r.names = append(r.names, name)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	sort.Strings(r.names)
	return r, nil
}

// Get returns the tooling called name.
func (r *Registry) Get(name string) (tooling.Tooling, bool) {
	t, ok := r.byName[name]
	return t, ok
}

// Names returns the configured names, sorted.
func (r *Registry) Names() []string { return append([]string(nil), r.names...) }

// All returns every tooling, in the order of Names.
func (r *Registry) All() []tooling.Tooling {
	out := make([]tooling.Tooling, len(r.names))
	for i, n := range r.names {
		out[i] = r.byName[n]
	}
	return out
}
