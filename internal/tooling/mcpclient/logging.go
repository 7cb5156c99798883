//lint:file-ignore SA1019 the MCP 2025-11-25 features servers ask for (roots, sampling, logging) are deprecated only from protocol 2026-07-28, which toolhostd does not speak (DefaultProtocolVersion)

package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Server log messages (notifications/message) go into toolhostd's log,
// under the logger "tooling.server" with the tooling's name, at the zap
// level of their MCP level. tooling.X.log_level asks the server for a
// minimum level (logging/setLevel) on every new session, when the server
// offers logging.

// maxLoggedData bounds a server log message's data in toolhostd's log.
const maxLoggedData = 4096

// mcpZapLevel maps an MCP logging level (RFC 5424 severity) to zap's.
func mcpZapLevel(l mcp.LoggingLevel) zapcore.Level {
	switch l {
	case "debug":
		return zapcore.DebugLevel
	case "info", "notice":
		return zapcore.InfoLevel
	case "warning":
		return zapcore.WarnLevel
	default: // error, critical, alert, emergency, and anything unknown
		return zapcore.ErrorLevel
	}
}

func (m *Client) onServerLog(_ context.Context, req *mcp.LoggingMessageRequest) {
	if req.Params == nil {
		return
	}
	p := req.Params
	lvl := mcpZapLevel(p.Level)
	log := m.log.Named("server")
	ce := log.Check(lvl, "")
	if ce == nil {
		return
	}
	msg, ok := p.Data.(string)
	if !ok {
		b, err := json.Marshal(p.Data)
		if err != nil {
			b = []byte(fmt.Sprint(p.Data))
		}
		msg = string(b)
	}
	if len(msg) > maxLoggedData {
		msg = msg[:maxLoggedData] + "…"
	}
	ce.Message = msg
	fields := []zap.Field{zap.String("level_mcp", string(p.Level))}
	if p.Logger != "" {
		fields = append(fields, zap.String("server_logger", p.Logger))
	}
	ce.Write(fields...)
}

// setLogLevel asks the server of s for tooling.X.log_level, if set and if
// the server offers logging.
func (m *Client) setLogLevel(s *session) {
	level := m.cfg.LogLevel
	if level == "" {
		return
	}
	if s.init == nil || s.init.Capabilities == nil || s.init.Capabilities.Logging == nil {
		m.log.Info("log_level is set but the server does not offer logging", zap.String("log_level", level))
		return
	}
	err := plainError(m.run(s.ctx, s, "logging/setLevel", func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)})
	}))
	if err != nil {
		if s.ctx.Err() == nil {
			m.log.Warn("logging/setLevel failed", zap.String("log_level", level), zap.Error(err))
		}
		return
	}
	m.log.Debug("server log level set", zap.String("log_level", level))
}
