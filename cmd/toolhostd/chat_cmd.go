package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/system"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// The operator's chat: one prompt to a configured provider, the answer
// streamed to stdout, and with --tools the tool loop an agent would run.

type chatOptions struct {
	model, system string
	tools         []string
	maxTurns      int
	maxTokens     uint32
}

func newChatCmd(opts *globalOptions) *cobra.Command {
	var co chatOptions
	cmd := &cobra.Command{
		Use:   "chat PROVIDER PROMPT",
		Short: "Ask a configured provider's model and stream its answer",
		Long: "chat sends PROMPT (with --system, a system prompt) to the provider's model and streams the\n" +
			"answer to stdout. With --tools TOOLING (or TOOLING=PATTERN,... to offer only the tools that\n" +
			"match) it runs the tool loop: the model gets those toolings' tools, each tool call it makes is\n" +
			"checked against the same grant patterns and made on the tooling, its result goes back as a tool\n" +
			"message, and the model is asked again, until it answers without a tool call or --max-turns is\n" +
			"reached (exit 1). Tool calls and their results are shown on stderr, with each turn's usage.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := loadConfig(opts)
			if err != nil {
				return err
			}
			pc := c.Provider[args[0]]
			if pc == nil {
				return withExit(exitUsage, fmt.Errorf("no provider named %q%s", args[0], definedNames("providers", c.Provider)))
			}
			if co.maxTurns < 1 {
				return withExit(exitUsage, errors.New("--max-turns must be at least 1"))
			}
			log, err := newLogger(c.Host, cmd.ErrOrStderr())
			if err != nil {
				return withExit(exitUsage, err)
			}
			defer func() { _ = log.Sync() }()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			sess, err := openChat(c, args[0], co.tools, log)
			if err != nil {
				return err
			}
			defer sess.close()
			box, err := openToolbox(ctx, sess.agent, co.tools)
			if err != nil {
				return err
			}
			return chat(ctx, sess, box, args[1], co, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&co.model, "model", "", "the model (default: the provider's model)")
	f.StringVar(&co.system, "system", "", "a system prompt")
	f.StringArrayVar(&co.tools, "tools", nil, "offer the tools of TOOLING, or only those matching TOOLING=PATTERN,... (repeatable)")
	f.IntVar(&co.maxTurns, "max-turns", 8, "the most model requests of one tool loop")
	f.Uint32Var(&co.maxTokens, "max-tokens", 0, "the most output tokens per answer (default: the provider's max_tokens)")
	return cmd
}

// chatSession is chat's graph (system.New, without an engine) and the
// agent "chat" through whose contract the model requests and tool calls go:
// validated, checked against the --tools patterns and audited as an
// agent's are.
type chatSession struct {
	sys   *system.System
	stop  func()
	agent *contract.Agent
	in    *inbox.Inbox
	ph    *contract.ProviderHandle
}

// openChat builds the system with only the --tools toolings started and
// gets the provider called name.
func openChat(c *config.Config, name string, grants []string, log *zap.Logger) (*chatSession, error) {
	pol, err := grantPolicy("chat", "--tools", grants)
	if err != nil {
		return nil, withExit(exitUsage, err)
	}
	named := map[string]bool{}
	for _, n := range grantNames(grants) {
		if c.Tooling[n] == nil {
			return nil, withExit(exitUsage, fmt.Errorf("--tools %s: no tooling named %q%s", n, n, definedNames("toolings", c.Tooling)))
		}
		named[n] = true
	}
	only := func(n string) bool { return named[n] }
	sys, err := system.New(c, system.Options{Log: log, NoHost: true, Toolings: only, Providers: []string{name}})
	if err != nil {
		return nil, withExit(exitUsage, err)
	}
	s := &chatSession{sys: sys, stop: sys.Start(), in: inbox.New(config.DefaultInboxCapacity)}
	opts := sys.AgentOptions()
	opts.Log, opts.Grants, opts.Policy = log, only, pol
	opts.ProviderAccess = contract.ProviderAccess{Granted: func(n string) bool { return n == name }}
	s.agent = contract.NewAgent(sys.Hub, "chat", s.in, opts)
	if s.ph, err = s.agent.GetProvider(name); err != nil {
		s.close()
		return nil, withExit(exitUsage, err)
	}
	return s, nil
}

func (s *chatSession) close() {
	s.agent.Close()
	s.in.Shutdown()
	s.stop()
	_ = s.sys.Close()
}

// stream sends req as a chat stream and writes its deltas to out as they
// come; it returns the whole response.
func (s *chatSession) stream(ctx context.Context, req provider.Request, out io.Writer) (provider.Response, bool, error) {
	id, err := s.ph.ChatStream(req)
	if err != nil {
		return provider.Response{}, false, err
	}
	wrote := false
	for {
		env, ok := s.in.Recv(ctx, nil)
		if !ok {
			s.ph.Cancel(id)
			return provider.Response{}, wrote, fmt.Errorf("the chat request was cancelled: %w", context.Cause(ctx))
		}
		if env.ID != id {
			continue
		}
		switch ev := env.Event.(type) {
		case inbox.ChatDelta:
			wrote = wrote || ev.Text != ""
			_, _ = io.WriteString(out, ev.Text)
		case inbox.ChatDone:
			return ev.Response, wrote, nil
		case inbox.Error:
			return provider.Response{}, wrote, &ev.Err
		}
	}
}

// chat runs the loop: ask, stream the text, make the tool calls, repeat.
func chat(ctx context.Context, s *chatSession, box *toolbox, prompt string, co chatOptions, out, errw io.Writer) error {
	var msgs []provider.Message
	if co.system != "" {
		msgs = append(msgs, provider.Message{Role: provider.RoleSystem, Content: co.system})
	}
	msgs = append(msgs, provider.Message{Role: provider.RoleUser, Content: prompt})
	for turn := 1; turn <= co.maxTurns; turn++ {
		req := provider.Request{Model: co.model, Messages: msgs, Tools: box.tools}
		if co.maxTokens > 0 {
			req.MaxTokens = &co.maxTokens
		}
		resp, wrote, err := s.stream(ctx, req, out)
		if wrote {
			fmt.Fprintln(out)
		}
		if err != nil {
			return withExit(exitFailure, err)
		}
		fmt.Fprintf(errw, "[%s: %s, %d tokens in, %d out]\n", resp.Model, finishName(resp.FinishReason), resp.Usage.InputTokens, resp.Usage.OutputTokens)
		msgs = append(msgs, resp.Message)
		if len(resp.Message.ToolCalls) == 0 {
			return nil
		}
		for _, call := range resp.Message.ToolCalls {
			fmt.Fprintf(errw, "→ %s(%s)\n", call.Name, call.Arguments)
			result := box.call(ctx, call)
			fmt.Fprintf(errw, "← %s\n", clip(result, 300))
			msgs = append(msgs, provider.Message{Role: provider.RoleTool, Content: result, ToolCallID: call.ID})
		}
	}
	return withExit(exitFailure, fmt.Errorf("the model still asks for tools after %d turns (--max-turns)", co.maxTurns))
}

func finishName(f provider.FinishReason) string {
	switch f {
	case provider.FinishStop:
		return "stop"
	case provider.FinishLength:
		return "length"
	case provider.FinishToolCalls:
		return "tool-calls"
	case provider.FinishContentFilter:
		return "content-filter"
	}
	return "other"
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// toolbox is the chat agent's handles on the --tools toolings and the
// tools they offer the model, narrowed by the grant patterns.
type toolbox struct {
	tools []tooling.Tool
	owner map[string]*contract.Handle // tool name -> its tooling's handle
}

// openToolbox gets a handle on each --tools tooling and lists its tools.
// A tool name two toolings share is an error: the model could not say
// which it means.
func openToolbox(ctx context.Context, a *contract.Agent, grants []string) (*toolbox, error) {
	box := &toolbox{owner: map[string]*contract.Handle{}}
	seen := map[string]bool{}
	for _, name := range grantNames(grants) {
		if seen[name] {
			continue
		}
		seen[name] = true
		h, err := a.Get(name)
		if err != nil {
			return nil, withExit(exitUsage, fmt.Errorf("--tools %s: %w", name, err))
		}
		list, err := h.ListTools(ctx)
		if err != nil {
			return nil, withExit(exitFailure, fmt.Errorf("--tools %s: %w", name, err))
		}
		for _, tl := range list {
			if other, dup := box.owner[tl.Name]; dup {
				return nil, withExit(exitUsage, fmt.Errorf("tool %q is offered by both %s and %s: narrow one with --tools TOOLING=PATTERN", tl.Name, other.Name(), name))
			}
			box.owner[tl.Name] = h
			box.tools = append(box.tools, tl)
		}
	}
	return box, nil
}

// call makes one tool call the model asked for, through the chat agent's
// contract (the grant patterns checked, the call audited), and returns
// what the model gets back: the result's text, or an error line.
func (b *toolbox) call(ctx context.Context, call provider.ToolCall) string {
	h := b.owner[call.Name]
	if h == nil {
		return fmt.Sprintf("error: no tool named %q is offered", call.Name)
	}
	args := call.Arguments
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	res, err := h.CallToolBlocking(ctx, call.Name, args)
	if err != nil {
		return "error: " + err.Error()
	}
	return resultText(res.Value)
}

// resultText is the text parts of a CallToolResult, else its JSON; an
// isError result is prefixed with "error: ".
func resultText(value string) string {
	var v struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal([]byte(value), &v); err != nil {
		return value
	}
	var parts []string
	for _, c := range v.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	text := value
	if len(parts) > 0 {
		text = strings.Join(parts, "\n")
	}
	if v.IsError {
		return "error: " + text
	}
	return text
}
