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
