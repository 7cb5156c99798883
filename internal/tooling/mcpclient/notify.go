package mcpclient

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// observer is the observer of the session cs when cs is the current
// session, nil otherwise (or when that session has none).
func (m *Client) observer(cs mcp.Session) tooling.Observer {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur == nil || mcp.Session(m.cur.cs) != cs {
		return nil
	}
	return m.cur.obs
}

func (m *Client) onToolListChanged(_ context.Context, req *mcp.ToolListChangedRequest) {
	m.mu.Lock()
	m.tools.invalidate()
	s := m.cur
	m.mu.Unlock()
	if s != nil && mcp.Session(s.cs) == req.Session {
		select {
		case s.refresh <- struct{}{}:
		default:
		}
	}
}

func (m *Client) onResourceListChanged(_ context.Context, req *mcp.ResourceListChangedRequest) {
	if o := m.observer(req.Session); o != nil {
		o.ResourceListChanged()
	}
}

func (m *Client) onResourceUpdated(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if req.Params == nil {
		return
	}
	if o := m.observer(req.Session); o != nil {
		o.ResourceUpdated(req.Params.URI)
	}
}

// CheckResourceListChanged waits for a session as any operation does and
// fails with unsupported unless its server offers resources.listChanged:
// without it no resource-list change is ever announced.
func (m *Client) CheckResourceListChanged(ctx context.Context) error {
	const op = "resources/list_changed"
	s, err := m.acquire(ctx, op)
	if err != nil {
		return err
	}
	c := s.init
	if c == nil || c.Capabilities == nil || c.Capabilities.Resources == nil || !c.Capabilities.Resources.ListChanged {
		return tooling.Errorf(tooling.CodeUnsupported, "%s: the server does not offer resources.listChanged (it never announces list changes)", op)
	}
	return nil
}
