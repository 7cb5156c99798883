//lint:file-ignore SA1019 the MCP 2025-11-25 features servers ask for (roots, sampling, logging) are deprecated only from protocol 2026-07-28, which toolhostd does not speak (DefaultProtocolVersion)

package mcpclient

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// Sampler answers a server's sampling/createMessage: a model request made
// on the server's behalf. Its error goes back to the server as the
// request's error.
type Sampler func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)

// onCreateMessage answers one sampling/createMessage through the sampler,
// logging it.
func (m *Client) onCreateMessage(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	p := req.Params
	if p == nil {
		p = &mcp.CreateMessageParams{}
	}
	start := time.Now()
	res, err := m.opts.sampler(ctx, p)
	if err != nil {
		m.log.Warn("a sampling request of the server failed", zap.Int("messages", len(p.Messages)), zap.Duration("duration", time.Since(start)), zap.Error(err))
		return nil, err
	}
	m.log.Info("answered a sampling request of the server", zap.Int("messages", len(p.Messages)), zap.String("model", res.Model), zap.Duration("duration", time.Since(start)))
	return res, nil
}
