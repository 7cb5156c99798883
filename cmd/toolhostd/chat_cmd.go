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
	"github.com/toolhostd/toolhostd/internal/policy"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
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
			p, err := provider.Open(args[0], *pc, log)
			if err != nil {
				return withExit(exitUsage, err)
			}
			if cl, ok := p.(io.Closer); ok {
				defer cl.Close()
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			box, err := openToolbox(ctx, c, co.tools, log)
			if err != nil {
				return err
			}
			defer box.close()
			return chat(ctx, p, box, args[1], co, cmd.OutOrStdout(), cmd.ErrOrStderr())
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

// chat runs the loop: ask, stream the text, make the tool calls, repeat.
func chat(ctx context.Context, p provider.Provider, box *toolbox, prompt string, co chatOptions, out, errw io.Writer) error {
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
		wrote := false
		resp, err := p.ChatStream(ctx, req, func(text string) {
			wrote = wrote || text != ""
			_, _ = io.WriteString(out, text)
		})
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

// toolbox is the toolings of --tools, their sessions and the tools they
// offer the model, narrowed by the grant patterns.
type toolbox struct {
	tools  []tooling.Tool
	owner  map[string]tooling.Tooling // tool name -> its tooling
	views  map[string]*policy.View    // tooling name -> its grant
	cancel context.CancelFunc
	done   []chan error
}

// openToolbox starts a session for each --tools tooling and lists its
// tools. A tool name two toolings share is an error: the model could not
// say which it means.
func openToolbox(ctx context.Context, c *config.Config, grants []string, log *zap.Logger) (*toolbox, error) {
	serveCtx, cancel := context.WithCancel(context.Background())
	box := &toolbox{owner: map[string]tooling.Tooling{}, views: map[string]*policy.View{}, cancel: cancel}
	pol, err := grantPolicy("chat", "--tools", grants)
	if err != nil {
		cancel()
		return nil, withExit(exitUsage, err)
	}
	for _, name := range grantNames(grants) {
		tc := c.Tooling[name]
		if tc == nil {
			box.close()
			return nil, withExit(exitUsage, fmt.Errorf("--tools %s: no tooling named %q%s", name, name, definedNames("toolings", c.Tooling)))
		}
		if _, dup := box.views[name]; dup {
			continue
		}
		tc.Name = name
		t, err := mcpclient.New(tc, log)
		if err != nil {
			box.close()
			return nil, withExit(exitUsage, err)
		}
		done := make(chan error, 1)
		go func() { done <- t.Serve(serveCtx) }()
		box.done = append(box.done, done)
		view := pol.View(name)
		box.views[name] = view
		list, err := t.ListTools(ctx)
		if err != nil {
			box.close()
			return nil, withExit(exitFailure, fmt.Errorf("--tools %s: %w", name, err))
		}
		for _, tl := range list {
			if !view.Grant().AllowTool(tl.Name) {
				continue
			}
			if other, dup := box.owner[tl.Name]; dup {
				box.close()
				return nil, withExit(exitUsage, fmt.Errorf("tool %q is offered by both %s and %s: narrow one with --tools TOOLING=PATTERN", tl.Name, other.Name(), name))
			}
			box.owner[tl.Name] = t
			box.tools = append(box.tools, tl)
		}
	}
	return box, nil
}

// call makes one tool call the model asked for and returns what the model
// gets back: the result's text, or an error line (a call the grant does not
// allow is not made).
func (b *toolbox) call(ctx context.Context, call provider.ToolCall) string {
	t := b.owner[call.Name]
	if t == nil {
		return fmt.Sprintf("error: no tool named %q is offered", call.Name)
	}
	if terr := b.views[t.Name()].Tool("call_tool", call.Name); terr != nil {
		return "error: " + terr.Error()
	}
	args := call.Arguments
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	res, err := t.CallTool(ctx, call.Name, json.RawMessage(args))
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

func (b *toolbox) close() {
	b.cancel()
	for _, d := range b.done {
		<-d
	}
}
