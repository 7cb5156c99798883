//lint:file-ignore SA1019 the MCP 2025-11-25 sampling feature is deprecated only from protocol 2026-07-28, which toolhostd does not speak

// Package sampling answers an MCP server's sampling/createMessage through a
// provider: a tooling's sampling table (config.Sampling) names the
// provider, the model and its allowed alternatives, a cap on maxTokens and
// a rate. The server's messages and system prompt become a provider
// request; the model's text answer goes back as the CreateMessageResult.
//
// Each request, answered or refused, is logged, audited (op "sampling",
// with the tooling and the provider) and counted in the provider metrics
// like an agent's chat, under the agent name "tooling:<name>" (Agent): the
// model requests a tooling's server causes are told apart from an agent's,
// and no agent can be so named (agent names have no colon).
package sampling

import (
	"context"
	"path"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/toolhostd/toolhostd/internal/audit"
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/metrics"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Agent is the agent name, in the audit log and the metrics' agent label,
// of the sampling requests of tooling's server.
func Agent(tooling string) string { return "tooling:" + tooling }

// Sampler answers the sampling requests of one tooling's server.
type Sampler struct {
	p       provider.Provider
	cfg     config.Sampling
	tooling string
	limit   *rate.Limiter // nil: no rate

	log     *zap.Logger
	audit   *audit.Log
	observe func(metrics.Chat)
}

// Options are where a sampler reports its requests; the zero Options
// report nowhere.
type Options struct {
	// Log logs each request: tooling, provider, model, outcome, duration.
	Log *zap.Logger
	// Audit gets each request's audit line (op audit.OpSampling; the
	// request's size and sha256, never its text).
	Audit *audit.Log
	// Observer gets each finished request (the metrics).
	Observer func(metrics.Chat)
}

// New is the sampler of tooling's server on p (the provider cfg.Provider
// names) as cfg says.
func New(p provider.Provider, tooling string, cfg config.Sampling, o Options) *Sampler {
	s := &Sampler{p: p, cfg: cfg, tooling: tooling, log: o.Log, audit: o.Audit, observe: o.Observer}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if cfg.RequestsPerMinute > 0 {
		s.limit = rate.NewLimiter(rate.Limit(cfg.RequestsPerMinute/60), max(1, int(cfg.RequestsPerMinute)))
	}
	return s
}

// CreateMessage answers one sampling/createMessage. It refuses, without a
// model request, a request over the rate (busy), one that asks for context
// (includeContext other than none: toolhostd lends no conversation) and a
// message that is not text (unsupported).
func (s *Sampler) CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (res *mcp.CreateMessageResult, err error) {
	start := time.Now()
	var (
		req  provider.Request
		resp provider.Response
		sent bool // req was built and sent
	)
	defer func() { s.report(start, req, sent, resp, err) }()
	if s.limit != nil && !s.limit.AllowN(time.Now(), 1) {
		return nil, tooling.Errorf(tooling.CodeBusy, "tooling %s: sampling past its requests_per_minute (%g)", s.tooling, s.cfg.RequestsPerMinute)
	}
	if p.IncludeContext != "" && p.IncludeContext != "none" {
		return nil, tooling.Errorf(tooling.CodeUnsupported, "tooling %s: sampling with includeContext %q is declined: toolhostd lends no conversation context", s.tooling, p.IncludeContext)
	}
	if req, err = s.request(p); err != nil {
		return nil, err
	}
	sent = true
	if resp, err = s.p.Chat(ctx, req); err != nil {
		if ctx.Err() != nil {
			err = tooling.Errorf(tooling.CodeCancelled, "tooling %s: the sampling request was cancelled", s.tooling)
		}
		return nil, err
	}
	return &mcp.CreateMessageResult{
		Role:       "assistant",
		Content:    &mcp.TextContent{Text: resp.Message.Content},
		Model:      resp.Model,
		StopReason: stopReason(resp.FinishReason),
	}, nil
}

// report logs, audits and counts one request.
func (s *Sampler) report(start time.Time, req provider.Request, sent bool, resp provider.Response, err error) {
	d := time.Since(start)
	model := resp.Model
	if model == "" {
		model = req.Model
	}
	oc, msg := audit.OutcomeOK, ""
	if err != nil {
		te := tooling.AsError(err)
		oc, msg = te.Code.String(), te.Message
	}
	s.log.Info("sampling request", zap.String("tooling", s.tooling), zap.String("provider", s.cfg.Provider),
		zap.String("model", model), zap.String("outcome", oc), zap.Duration("duration", d))
	r := audit.Record{
		Agent: Agent(s.tooling), Tooling: s.tooling, Op: audit.OpSampling,
		Outcome: oc, Message: msg, Duration: d,
		ModelRequest: audit.ModelRequest{Provider: s.cfg.Provider, Model: model,
			InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens, HasUsage: err == nil},
	}
	if s.audit != nil {
		if sent {
			r.Request, r.HasRequest = provider.AuditJSON(req), true
		}
		s.audit.Write(r)
	}
	if s.observe != nil {
		s.observe(metrics.Chat{Agent: Agent(s.tooling), Provider: s.cfg.Provider, Model: model, Outcome: oc, Duration: d,
			InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens})
	}
}

// request is the provider request of p.
func (s *Sampler) request(p *mcp.CreateMessageParams) (provider.Request, error) {
	req := provider.Request{Model: s.model(p.ModelPreferences), Stop: p.StopSequences}
	if p.SystemPrompt != "" {
		req.Messages = append(req.Messages, provider.Message{Role: provider.RoleSystem, Content: p.SystemPrompt})
	}
	for i, m := range p.Messages {
		if m == nil {
			continue
		}
		text, ok := m.Content.(*mcp.TextContent)
		if !ok {
			return provider.Request{}, tooling.Errorf(tooling.CodeUnsupported, "tooling %s: sampling message %d is %T; only text is sampled", s.tooling, i, m.Content)
		}
		role := provider.RoleUser
		switch m.Role {
		case "user":
		case "assistant":
			role = provider.RoleAssistant
		default:
			return provider.Request{}, tooling.Errorf(tooling.CodeInvalidArgument, "tooling %s: sampling message %d has role %q", s.tooling, i, m.Role)
		}
		req.Messages = append(req.Messages, provider.Message{Role: role, Content: text.Text})
	}
	if len(req.Messages) == 0 {
		return provider.Request{}, tooling.Errorf(tooling.CodeInvalidArgument, "tooling %s: a sampling request without messages", s.tooling)
	}
	if n := p.MaxTokens; n > 0 {
		if s.cfg.MaxTokens > 0 {
			n = min(n, int64(s.cfg.MaxTokens))
		}
		t := uint32(min(n, 1<<31))
		req.MaxTokens = &t
	}
	if p.Temperature != 0 {
		t := float32(p.Temperature)
		req.Temperature = &t
	}
	return req, nil
}

// model is the first of the server's model hints that one of the allowed
// globs matches, else the sampling table's model ("" is the provider's).
func (s *Sampler) model(prefs *mcp.ModelPreferences) string {
	if prefs != nil {
		for _, h := range prefs.Hints {
			if h == nil || h.Name == "" {
				continue
			}
			for _, g := range s.cfg.Models {
				if ok, _ := path.Match(g, h.Name); ok {
					return h.Name
				}
			}
		}
	}
	return s.cfg.Model
}

// stopReason is MCP's name for why the model stopped.
func stopReason(f provider.FinishReason) string {
	switch f {
	case provider.FinishStop:
		return "endTurn"
	case provider.FinishLength:
		return "maxTokens"
	}
	return "other"
}
