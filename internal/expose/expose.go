// Package expose is what the protocol endpoints (the MCP server, the A2A
// server) know of the agents: which are exposed over which protocol, what
// they say of themselves (description, skills), and when that changes (a
// reload). The daemon keeps a Catalog up to date; the endpoints read it.
package expose

import (
	"slices"
	"sync"
)

// Protocols an agent can be exposed over (an agent's expose list).
const (
	MCP = "mcp"
	A2A = "a2a"
)

// Agent is one exposed agent as the endpoints describe it.
type Agent struct {
	// Name is the agent's name: its MCP tool's name, its A2A card's name
	// and the last element of its A2A path.
	Name string
	// Description is [agent.X] description.
	Description string
	// Skills are its A2A card's skills ([agent.X] skills); none makes one
	// skill from the description.
	Skills []Skill
}

// Skill is one A2A skill of an agent.
type Skill struct {
	ID          string
	Name        string
	Description string
	Tags        []string
	Examples    []string
}

// Catalog lists the exposed agents. Its methods are safe for concurrent
// use.
type Catalog interface {
	// Exposed lists the agents exposed over protocol (MCP or A2A).
	Exposed(protocol string) []Agent
	// OnChange calls f after every change of what Exposed returns, until
	// stop is called; f must not block.
	OnChange(f func()) (stop func())
}

// Static is a Catalog the daemon sets whole at start and on every reload.
type Static struct {
	mu     sync.Mutex
	agents map[string][]Agent // by protocol
	subs   map[int]func()
	next   int
}

var _ Catalog = (*Static)(nil)

// NewStatic is a catalog holding agents (by protocol).
func NewStatic(agents map[string][]Agent) *Static {
	return &Static{agents: clone(agents), subs: map[int]func(){}}
}

// Set replaces the catalog and tells the subscribers when anything
// changed.
func (c *Static) Set(agents map[string][]Agent) {
	c.mu.Lock()
	same := equal(c.agents, agents)
	c.agents = clone(agents)
	subs := make([]func(), 0, len(c.subs))
	for _, f := range c.subs {
		subs = append(subs, f)
	}
	c.mu.Unlock()
	if same {
		return
	}
	for _, f := range subs {
		f()
	}
}

// Exposed implements Catalog.
func (c *Static) Exposed(protocol string) []Agent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.agents[protocol])
}

// OnChange implements Catalog.
func (c *Static) OnChange(f func()) (stop func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.next
	c.next++
	c.subs[k] = f
	return func() {
		c.mu.Lock()
		delete(c.subs, k)
		c.mu.Unlock()
	}
}

// Find is the agent named name among those exposed over protocol.
func Find(c Catalog, protocol, name string) (Agent, bool) {
	for _, a := range c.Exposed(protocol) {
		if a.Name == name {
			return a, true
		}
	}
	return Agent{}, false
}

func clone(m map[string][]Agent) map[string][]Agent {
	out := make(map[string][]Agent, len(m))
	for p, as := range m {
		out[p] = slices.Clone(as)
	}
	return out
}

func equal(a, b map[string][]Agent) bool {
	if len(a) != len(b) {
		return false
	}
	for p, as := range a {
		if !slices.EqualFunc(as, b[p], func(x, y Agent) bool {
			return x.Name == y.Name && x.Description == y.Description && slices.EqualFunc(x.Skills, y.Skills, equalSkill)
		}) {
			return false
		}
	}
	return true
}

func equalSkill(x, y Skill) bool {
	return x.ID == y.ID && x.Name == y.Name && x.Description == y.Description &&
		slices.Equal(x.Tags, y.Tags) && slices.Equal(x.Examples, y.Examples)
}
