package tooling

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func (m *MCP) isCurrent(cs mcp.Session) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur != nil && mcp.Session(m.cur.cs) == cs
}

func (m *MCP) onToolListChanged(_ context.Context, req *mcp.ToolListChangedRequest) {
	m.mu.Lock()
	m.toolsOK = false
	m.tools = nil
	m.toolsGen++
	s := m.cur
	m.mu.Unlock()
	if s != nil && mcp.Session(s.cs) == req.Session {
		select {
		case s.refresh <- struct{}{}:
		default:
		}
	}
}

func (m *MCP) onResourceListChanged(_ context.Context, req *mcp.ResourceListChangedRequest) {
	if !m.isCurrent(req.Session) {
		return
	}
	if o := m.obs(); o != nil {
		o.ResourceListChanged()
	}
}

func (m *MCP) onResourceUpdated(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if req.Params == nil || !m.isCurrent(req.Session) {
		return
	}
	if o := m.obs(); o != nil {
		o.ResourceUpdated(req.Params.URI)
	}
}

// CheckResourceListChanged waits for a session as any operation does and
// fails with unsupported unless its server offers resources.listChanged:
// without it no resource-list change is ever announced.
func (m *MCP) CheckResourceListChanged(ctx context.Context) error {
	const op = "resources/list_changed"
	s, err := m.acquire(ctx, op)
	if err != nil {
		return err
	}
	c := s.init
	if c == nil || c.Capabilities == nil || c.Capabilities.Resources == nil || !c.Capabilities.Resources.ListChanged {
		return Errorf(CodeUnsupported, "%s: the server does not offer resources.listChanged (it never announces list changes)", op)
	}
	return nil
}
