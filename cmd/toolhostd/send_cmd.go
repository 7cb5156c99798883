package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/message"
)

type sendOptions struct {
	socket, addr, token string
	session, key        string
	asJSON              bool
	timeout             time.Duration
}

func newSendCmd(g *globalOptions) *cobra.Command {
	o := &sendOptions{}
	cmd := &cobra.Command{
		Use:   "send AGENT [TEXT]",
		Short: "Send a message to a running agent and print its reply as it streams",
		Long: `send sends TEXT (standard input when TEXT is absent or "-") to the agent
AGENT of the running toolhostd (toolhostd serve) and writes the reply to
standard output as it streams, ending it with a newline. A stream that
breaks is picked up where it stopped.

Exit status: 0 when the agent replied; 1 when the reply ended in an error
(the agent's reply-error, its instance stopping, a cancel); 2 when the
message was not delivered (unknown agent, sender not accepted, too large,
busy) or no reply came within --timeout (the message goes on: its id is
printed, and GET /v1/agents/AGENT/messages/ID has its reply).`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			text := "-"
			if len(args) == 2 {
				text = args[1]
			}
			return sendMessage(cmd, g, o, args[0], text)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.socket, "socket", "", "the daemon's control socket (default: as for ps)")
	f.StringVar(&o.addr, "addr", "", "reach the daemon's control API on this TCP host:port instead of the socket ([host] control_listen)")
	f.StringVar(&o.token, "token", "", "the bearer token for --addr (default: $TOOLHOSTD_TOKEN)")
	f.StringVar(&o.session, "session", "", "the conversation the message belongs to")
	f.StringVar(&o.key, "idempotency-key", "", "a retry with the same key gets the first message's reply instead of sending again")
	f.BoolVar(&o.asJSON, "json", false, "wait for the whole reply and print the message's state as JSON")
	f.DurationVar(&o.timeout, "timeout", 0, "give up waiting after this long (0: no limit)")
	return cmd
}

func sendMessage(cmd *cobra.Command, g *globalOptions, o *sendOptions, agent, text string) error {
	if text == "-" {
		b, err := io.ReadAll(cmd.InOrStdin())
		if err != nil {
			return withExit(exitUsage, fmt.Errorf("reading the message from standard input: %w", err))
		}
		text = strings.TrimSuffix(string(b), "\n")
	}
	c, err := o.dial(g)
	if err != nil {
		return withExit(exitHost, err)
	}
	defer c.Close()
	ctx := cmd.Context()
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	out := cmd.OutOrStdout()
	so := control.SendOptions{Session: o.session, IdempotencyKey: o.key}
	var st control.MessageStatus
	if o.asJSON {
		st, err = c.Send(ctx, agent, text, so)
		for err == nil && (st.Status == message.StatusQueued || st.Status == message.StatusWorking) {
			st, err = c.WaitMessage(ctx, agent, st.ID, control.MaxMessageWait) // the daemon's wait ran out: wait again
		}
	} else {
		printed := 0
		st, err = c.SendStream(ctx, agent, text, so, func(ev message.Event) {
			switch ev.Kind {
			case message.KindDelta:
				fmt.Fprint(out, ev.Text)
				printed += len(ev.Text)
			case message.KindReply:
				if printed <= len(ev.Text) {
					fmt.Fprintln(out, ev.Text[printed:])
				}
			}
		})
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return withExit(exitHost, fmt.Errorf("no reply within %v (the message goes on)", o.timeout))
	case err != nil:
		return withExit(exitHost, err)
	case o.asJSON:
		if err := writeJSON(out, st); err != nil {
			return err
		}
	}
	if st.Error != nil {
		return withExit(exitFailure, fmt.Errorf("%s: %s", st.Error.Code, st.Error.Message))
	}
	return nil
}

// dial reaches the daemon: --addr over TCP with its token, else the socket.
func (o *sendOptions) dial(g *globalOptions) (*control.Client, error) {
	if o.addr == "" {
		return dialDaemon(g, o.socket)
	}
	token := o.token
	if token == "" {
		token = os.Getenv("TOOLHOSTD_TOKEN")
	}
	return control.DialTCP(o.addr, token)
}
