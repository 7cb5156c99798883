package expose

import (
	"slices"
	"strings"

	"github.com/toolhostd/toolhostd/internal/config"
)

// FromConfig is what a Catalog holds for c: by protocol, the agents whose
// expose names it, sorted by name (Static.Set it at start and on reload).
func FromConfig(c *config.Config) map[string][]Agent {
	out := map[string][]Agent{}
	for _, a := range c.Agent {
		for _, p := range a.Expose {
			out[p] = append(out[p], agentOf(a))
		}
	}
	for _, as := range out {
		slices.SortFunc(as, func(x, y Agent) int { return strings.Compare(x.Name, y.Name) })
	}
	return out
}

func agentOf(a *config.Agent) Agent {
	out := Agent{Name: a.Name, Description: a.Description}
	for _, k := range a.Skills {
		desc := k.Description
		if desc == "" {
			desc = a.Description
		}
		out.Skills = append(out.Skills, Skill{ID: k.ID, Name: k.Name, Description: desc, Tags: k.Tags, Examples: k.Examples})
	}
	return out
}
