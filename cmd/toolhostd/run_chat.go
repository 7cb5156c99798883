package main

// run --chat: one agent in one process, talked to line by line through the
// one message path (a message.Router over this single agent).

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/oplog"
	"github.com/toolhostd/toolhostd/internal/system"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// chatRun is what run built for the agent --chat talks to.
type chatRun struct {
	log         *zap.Logger
	sys         *system.System
	prog        *host.Program
	cfg         host.AgentConfig
	agent       *config.Agent // its [agent.X], or nil
	oplog       *oplog.Log    // a durable agent's run's (openRunOplog), or nil
	path, input string
	session     string
	sigs        <-chan os.Signal
}

// chatAgents is the router's view of run --chat: the one agent, taking
// messages from "api" only (so not from itself); any other name is not
// found.
type chatAgents struct {
	name   string
	target message.Target
	agent  atomic.Pointer[host.Agent] // set once it is started
}

func (c *chatAgents) Target(name string) (message.Target, error) {
	if name != c.name {
		return message.Target{}, message.Refuse(message.ErrUnknownAgent, tooling.CodeNotFound,
			"no agent %q: run --chat runs only agent %q", name, c.name)
	}
	return c.target, nil
}

func (c *chatAgents) Deliver(_ context.Context, m *message.Message) error {
	a := c.agent.Load()
	if a == nil || !a.Receives() {
		return message.Refuse(message.ErrUnsupported, tooling.CodeUnsupported, "agent %q cannot receive messages", c.name)
	}
	return a.Mailbox().Put(m)
}

// chatAgent is `toolhostd run --chat`: it starts the agent, sends it each
// line of standard input and streams each reply to standard output, until
// the input ends, a signal comes or the agent ends; then it stops the agent
// and exits as run does.
func chatAgent(cmd *cobra.Command, c chatRun) error {
	target := message.Target{Accepts: []string{message.SenderAPI}}
	if c.agent != nil {
		target.MaxMessageBytes = int(c.agent.Messaging.MaxMessageBytes)
		target.AuditContent = c.agent.Messaging.AuditArguments
	}
	agents := &chatAgents{name: c.cfg.Name, target: target}
	c.log = c.log.Named("chat")
	ro := message.Options{Audit: c.sys.Audit, Log: c.log}
	if t := c.sys.Tracing; t != nil && t.On() {
		ro.Tracer, ro.CaptureContent = t.Provider(), t.CaptureContent()
	}
	router := message.NewRouter(agents, ro)
	// What the agent sends reaches the router, which knows no agent but
	// itself (not-found), and it does not accept its own messages (denied).
	c.cfg.Messaging = contract.Messaging{Router: router, SendsTo: func(string) bool { return true },
		AuditContent: target.AuditContent}
	if !host.Receives(c.prog) {
		endRunOplog(c.oplog, nil, c.log) // nothing ran
		return withExit(exitHost, fmt.Errorf("%s cannot receive messages: its component was built against toolhost:agent 0.1.0 or 0.2.0, and --chat needs 0.3.0 (rebuild it with this toolhostd)", c.path))
	}
	agent := c.sys.Host.Start(c.prog, c.cfg, c.input)
	agents.agent.Store(agent)

	quit := make(chan struct{})
	defer close(quit)
	lines := readLines(cmd.InOrStdin(), quit, c.log)
	ch := &chatter{out: cmd.OutOrStdout(), errs: cmd.ErrOrStderr(), log: c.log, agent: agent, sigs: c.sigs}
	// A durable chat killed mid-reply: its message is resumed from the
	// oplog, and its reply printed whole before the next line is read.
	for _, id := range agent.Resumed() {
		if m, ok := router.Get(c.cfg.Name, id); ok && !ch.stopped {
			c.log.Info("the reply to a message sent before the restart", zap.String("message_id", id))
			ch.follow(m)
		}
	}
	for !ch.stopped {
		select {
		case line, ok := <-lines:
			if !ok {
				c.log.Debug("end of input: stopping the agent", zap.Duration("grace", c.cfg.Limits.StopGrace))
				ch.stop("")
				break
			}
			ch.converse(cmd.Context(), router, message.Request{Agent: c.cfg.Name, Session: c.session,
				Sender: message.SenderAPI, Content: line})
		case s := <-c.sigs:
			ch.stop(s.String())
		case <-agent.Done():
			ch.stopped = true
		}
	}
	out, err := agent.Wait()
	endRunOplog(c.oplog, err, c.log)
	if err == nil {
		c.log.Info("the agent returned", zap.String("output", out))
	}
	return runExit(err)
}

// chatter sends the messages of a chat and prints their replies.
type chatter struct {
	out, errs io.Writer
	log       *zap.Logger
	agent     *host.Agent
	sigs      <-chan os.Signal
	stopped   bool // the agent was told to stop, or it ended
}

// stop gives the agent its shutdown and grace; signal names the signal
// that asked for it ("" for the end of input).
func (c *chatter) stop(signal string) {
	if signal != "" {
		c.log.Info("stopping the agent", zap.String("signal", signal))
	}
	c.agent.Stop()
	c.stopped = true
}

// converse sends one message and streams its reply: each delta as it
// comes, then the rest of the whole reply and a newline; an error ends up
// on stderr. A signal meanwhile stops the agent, which fails the message.
func (c *chatter) converse(ctx context.Context, r *message.Router, req message.Request) {
	m, _, err := r.Send(ctx, req)
	if err != nil {
		herr := tooling.AsError(err)
		fmt.Fprintf(c.errs, "error: %s: %s\n", herr.Code, herr.Message)
		return
	}
	c.follow(m)
}

// follow streams m's reply until it ends (see converse).
func (c *chatter) follow(m *message.Message) {
	var seq uint64
	printed := 0
	for {
		evs, ended, changed := m.After(seq)
		for _, ev := range evs {
			seq = ev.Seq
			switch ev.Kind {
			case message.KindDelta:
				fmt.Fprint(c.out, ev.Text)
				printed += len(ev.Text)
			case message.KindReply:
				fmt.Fprintln(c.out, ev.Text[min(printed, len(ev.Text)):])
			case message.KindError:
				if printed > 0 {
					fmt.Fprintln(c.out) // end the deltas' line
				}
				fmt.Fprintf(c.errs, "error: %s: %s\n", ev.Code, ev.Text)
			}
		}
		if ended {
			return
		}
		select {
		case <-changed:
		case s := <-c.sigs:
			c.stop(s.String())
		}
	}
}

// readLines sends each line of r (without its line ending; empty ones
// skipped) until r ends or quit is closed, then closes the channel.
func readLines(r io.Reader, quit <-chan struct{}, log *zap.Logger) <-chan string {
	lines := make(chan string)
	go func() {
		defer close(lines)
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if line = strings.TrimRight(line, "\r\n"); line != "" {
				select {
				case lines <- line:
				case <-quit:
					return
				}
			}
			if err != nil {
				if err != io.EOF {
					log.Warn("reading standard input", zap.Error(err))
				}
				return
			}
		}
	}()
	return lines
}
