package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/gateway"
	"github.com/toolhostd/toolhostd/internal/inbox"
)

func newWatchCmd(opts *globalOptions) *cobra.Command {
	var list bool
	cmd := &cobra.Command{
		Use:   "watch NAME (URI | --list)",
		Short: "Subscribe to a resource (or the resource list) and print each event as a JSON line",
		Long: "watch subscribes, through the same pump and inbox an agent uses, to the resource URI of the\n" +
			"tooling NAME (or with --list to its resource list) and prints every envelope as one JSON\n" +
			"line until interrupted (SIGINT/SIGTERM, exit 0):\n" +
			"  {\"id\":…,\"event\":\"resource-updated\",\"content\":{\"uri\":…,\"mimeType\":…,\"content\":…}}\n" +
			"  {\"id\":…,\"event\":\"resource-list-updated\",\"resources\":[{\"uri\":…,\"name\":…},…]}\n" +
			"  {\"id\":…,\"event\":\"error\",\"code\":…,\"message\":…}  (the subscription ended: exit 1)\n" +
			"A server without resources.subscribe makes URI watching fail with unsupported (exit 1), one\n" +
			"without resources.listChanged --list watching.",
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case list && len(args) != 1:
				return withExit(exitUsage, fmt.Errorf("watch --list takes the tooling NAME only"))
			case !list && len(args) != 2:
				return withExit(exitUsage, fmt.Errorf("watch takes NAME and URI (or NAME --list)"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			uri := ""
			if !list {
				uri = args[1]
			}
			return watchCmd(cmd, opts, args[0], uri)
		},
	}
	cmd.Flags().BoolVar(&list, "list", false, "watch the resource list instead of one resource")
	return cmd
}

func watchCmd(cmd *cobra.Command, opts *globalOptions, name, uri string) error {
	sys, log, err := oneShotSystem(opts, name, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	defer sys.Close()
	entries := []gateway.Entry{{Tooling: sys.Toolings[name], Limits: gateway.LimitsFrom(sys.Config.Tooling[name])}}
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return watch(ctx, cmd.OutOrStdout(), entries, log, name, uri)
}

// watch serves the toolings of entries, subscribes to uri on the one called
// name (to its resource list when uri is "") and writes every envelope as a
// JSON line to out until ctx ends (nil) or the subscription fails.
func watch(ctx context.Context, out io.Writer, entries []gateway.Entry, log *zap.Logger, name, uri string) error {
	hub := gateway.NewHub(entries, log)
	hubCtx, stopHub := context.WithCancel(context.Background())
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); _ = hub.Serve(hubCtx) }()
	defer func() { stopHub(); <-hubDone }()

	in := inbox.New(0)
	agent := contract.NewAgent(hub, "watch", in, contract.Options{})
	defer agent.Close()
	h, err := agent.Get(name)
	if err != nil {
		return withExit(exitFailure, err)
	}
	var id string
	if uri == "" {
		// A server that never announces list changes would leave the
		// watch silent forever: say so at once, as for subscribe.
		for _, e := range entries {
			if lc, ok := e.Tooling.(listChangeChecker); ok && e.Tooling.Name() == name {
				if err := lc.CheckResourceListChanged(ctx); err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return withExit(exitFailure, err)
				}
			}
		}
		id, err = h.SubscribeResourceList()
	} else {
		id, err = h.SubscribeResource(ctx, uri)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return withExit(exitFailure, err)
	}
	log.Info("watching", zap.String("tooling", name), zap.String("uri", uri), zap.String("sub_id", id))
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for {
		env, ok := in.Recv(ctx, nil)
		if !ok {
			return nil // interrupted
		}
		line, failure := watchLine(env)
		if err := enc.Encode(line); err != nil {
			return withExit(exitHost, err)
		}
		if failure != nil {
			return withExit(exitFailure, failure)
		}
	}
}

// listChangeChecker is a tooling that can tell whether its server
// announces resource-list changes (mcpclient.Client).
type listChangeChecker interface {
	CheckResourceListChanged(ctx context.Context) error
}

// watchResource is a resource-info as watch prints it.
type watchResource struct {
	URI         string  `json:"uri"`
	Name        string  `json:"name"`
	Description *string `json:"description,omitempty"`
	MIMEType    *string `json:"mimeType,omitempty"`
}

// watchContent is a resource-content as watch prints it.
type watchContent struct {
	URI      string  `json:"uri"`
	MIMEType *string `json:"mimeType,omitempty"`
	Content  string  `json:"content"`
}

// watchEvent is one printed line.
type watchEvent struct {
	ID        string          `json:"id"`
	Event     string          `json:"event"`
	Content   *watchContent   `json:"content,omitempty"`
	Resources []watchResource `json:"resources,omitzero"`
	Code      string          `json:"code,omitempty"`
	Message   string          `json:"message,omitempty"`
}

// watchLine turns an envelope into its line; an error event is also
// returned as the failure that ends the watch.
func watchLine(env inbox.Envelope) (watchEvent, error) {
	line := watchEvent{ID: env.ID}
	switch ev := env.Event.(type) {
	case inbox.ResourceUpdated:
		line.Event = "resource-updated"
		line.Content = &watchContent{URI: ev.Content.URI, MIMEType: ev.Content.MIMEType, Content: ev.Content.Content}
	case inbox.ResourceListUpdated:
		line.Event = "resource-list-updated"
		line.Resources = make([]watchResource, len(ev.Resources))
		for i, r := range ev.Resources {
			line.Resources[i] = watchResource{URI: r.URI, Name: r.Name, Description: r.Description, MIMEType: r.MIMEType}
		}
	case inbox.Error:
		line.Event = "error"
		line.Code = ev.Err.Code.String()
		line.Message = ev.Err.Message
		return line, &ev.Err
	case inbox.ToolResult:
		line.Event = "tool-result" // watch makes no calls; printed for completeness
	case inbox.Shutdown:
		line.Event = "shutdown"
	}
	return line, nil
}
