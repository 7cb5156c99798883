package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth"
	"github.com/toolhostd/toolhostd/internal/tooling/transport"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Dialer makes the go-sdk transport for one connection attempt. The mcp kind
// builds one from the config; Options.Dialer replaces it (tests, embedding).
type Dialer func(ctx context.Context) (mcp.Transport, error)

// dialed is one connection attempt's transport and what it leaves behind.
type dialed struct {
	transport mcp.Transport
	// kill ends the server at once (stdio: SIGKILL to its process group);
	// nil when there is nothing to kill.
	kill func()
	// cleanup runs once the session is closed.
	cleanup func()
	// status keeps an HTTP answer that hints at a transport mistake.
	status *transport.HTTPStatus
	// oauth is the tooling's OAuth handler and url the endpoint it
	// authorizes for (http and sse with an oauth table).
	oauth auth.OAuthHandler
	url   string
}

// errPermanent marks a config the mcp kind can never run.
var errPermanent = errors.New("unusable tooling config")

// checkConfig reports a config Serve can never run.
func checkConfig(cfg *config.Tooling) error {
	if cfg.Kind != "" && cfg.Kind != tooling.KindMCP {
		return fmt.Errorf("%w: unknown kind %q", errPermanent, cfg.Kind)
	}
	switch cfg.Transport {
	case transport.Stdio, "":
		if cfg.Command == "" {
			return fmt.Errorf("%w: transport stdio needs a command", errPermanent)
		}
	case transport.HTTP, transport.SSE:
		if cfg.URL == "" {
			return fmt.Errorf("%w: transport %s needs a url", errPermanent, cfg.Transport)
		}
	default:
		return fmt.Errorf("%w: unknown transport %q", errPermanent, cfg.Transport)
	}
	return nil
}

// dial builds the transport the config describes. Secret references are
// expanded here, at use; their values are never logged. track follows the
// connection's writes for closing it.
func (m *Client) dial(track *transport.Tracker) (*dialed, error) {
	cfg := m.cfg
	switch cfg.Transport {
	case transport.Stdio, "":
		return m.dialStdio(track)
	case transport.HTTP, transport.SSE:
		u, err := expand(cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("url: %w", err)
		}
		var secrets []tooling.Redaction
		if u != cfg.URL {
			// Errors of net/http quote the URL: show the config's text instead.
			secrets = append(secrets, tooling.Redaction{Secret: u, Shown: cfg.URL})
			if pu, err := url.Parse(u); err == nil {
				secrets = append(secrets, tooling.Redaction{Secret: pu.String(), Shown: cfg.URL}, tooling.Redaction{Secret: pu.Redacted(), Shown: cfg.URL})
			}
		}
		h := make(http.Header, len(cfg.Headers))
		for k, v := range cfg.Headers {
			ev, err := expand(v)
			if err != nil {
				return nil, fmt.Errorf("header %s: %w", k, err)
			}
			if ev != v && ev != "" {
				secrets = append(secrets, tooling.Redaction{Secret: ev, Shown: "[" + k + " redacted]"})
			}
			h.Set(k, ev)
		}
		oa, err := oauth.NewSetup(m.cfg, m.log, m.opts.login, m.onToken)
		if err != nil {
			return nil, err
		}
		base := http.DefaultTransport.(*http.Transport).Clone()
		status := &transport.HTTPStatus{}
		limit := &transport.MessageLimit{Max: m.opts.maxMessage, Tooling: m.name, Log: m.log.Named("http")}
		var rt http.RoundTripper = &transport.Header{Base: base, Headers: h, Track: track, Status: status, Limit: limit}
		d := &dialed{cleanup: base.CloseIdleConnections, status: status}
		var oauthHandler auth.OAuthHandler
		if oa == nil {
			// A server that asks for OAuth: say how to give it some.
			rt = &oauth.ChallengeTransport{Base: rt, Seen: &m.oauthWanted}
		} else {
			secrets = append(secrets, oa.Secrets...)
			oauthHandler = oa.Handler
			d.oauth, d.url = oa.Handler, u
			d.cleanup = func() { base.CloseIdleConnections(); oa.Cleanup() }
		}
		m.setSecrets(secrets)
		// Events are capped by limit (a message over it fails its own
		// request); go-sdk's cap, which fails the session, sits above it.
		maxEvent := int(min(m.opts.maxMessage+64<<10, 1<<40))
		if cfg.Transport == transport.HTTP {
			d.transport = &mcp.StreamableClientTransport{Endpoint: u, HTTPClient: &http.Client{Transport: rt}, OAuthHandler: oauthHandler, MaxEventSize: maxEvent}
		} else {
			if oauthHandler != nil {
				// go-sdk's SSE client has no OAuth support of its own.
				rt = &oauth.Transport{Base: rt, Handler: oauthHandler}
			}
			d.transport = &mcp.SSEClientTransport{Endpoint: u, HTTPClient: &http.Client{Transport: rt}, MaxEventSize: maxEvent}
		}
		return d, nil
	}
	return nil, fmt.Errorf("%w: unknown transport %q", errPermanent, cfg.Transport)
}

func (m *Client) dialStdio(track *transport.Tracker) (*dialed, error) {
	cfg := m.cfg
	command, err := expand(cfg.Command)
	if err != nil {
		return nil, fmt.Errorf("command: %w", err)
	}
	args := make([]string, len(cfg.Args))
	for i, a := range cfg.Args {
		if args[i], err = expand(a); err != nil {
			return nil, fmt.Errorf("args[%d]: %w", i, err)
		}
	}
	env := os.Environ()
	keys := make([]string, 0, len(cfg.Env))
	for k := range cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := expand(cfg.Env[k])
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", k, err)
		}
		env = append(env, k+"="+v)
	}
	cmd := exec.Command(command, args...)
	cmd.Env = env
	cmd.Dir = cfg.Cwd
	stderr := &transport.LineLogger{Log: m.log.Named("stderr")}
	cmd.Stderr = stderr
	// Bound the wait for the stderr copy when a grandchild keeps it open.
	cmd.WaitDelay = time.Second
	// Own process group, so that killing the server kills what it spawned;
	// on Linux the server is also killed when toolhostd dies.
	cmd.SysProcAttr = transport.ServerProcAttr()
	return &dialed{
		transport: &transport.Command{
			Cmd: cmd, Terminate: m.opts.terminate, MaxMessage: m.opts.maxMessage,
			Tooling: m.name, Log: m.log.Named("stdout"), Track: track, Stderr: stderr,
		},
		kill: func() {
			if cmd.Process != nil {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
		},
		cleanup: stderr.Flush,
	}, nil
}

// slogToZap lets go-sdk's slog logging reach the zap log.
type slogToZap struct {
	log   *zap.Logger
	attrs []zap.Field
}

func (h *slogToZap) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.Core().Enabled(zapLevel(l))
}

func (h *slogToZap) Handle(_ context.Context, r slog.Record) error {
	fields := append([]zap.Field(nil), h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		fields = append(fields, zap.Any(a.Key, a.Value.Any()))
		return true
	})
	if ce := h.log.Check(zapLevel(r.Level), r.Message); ce != nil {
		ce.Write(fields...)
	}
	return nil
}

func (h *slogToZap) WithAttrs(as []slog.Attr) slog.Handler {
	n := &slogToZap{log: h.log, attrs: append([]zap.Field(nil), h.attrs...)}
	for _, a := range as {
		n.attrs = append(n.attrs, zap.Any(a.Key, a.Value.Any()))
	}
	return n
}

func (h *slogToZap) WithGroup(name string) slog.Handler {
	return &slogToZap{log: h.log.Named(name), attrs: h.attrs}
}

func zapLevel(l slog.Level) zapcore.Level {
	switch {
	case l >= slog.LevelError:
		return zapcore.ErrorLevel
	case l >= slog.LevelWarn:
		return zapcore.WarnLevel
	case l >= slog.LevelInfo:
		// go-sdk's info messages are per-request chatter.
		return zapcore.DebugLevel
	}
	return zapcore.DebugLevel
}

func (m *Client) setSecrets(rs []tooling.Redaction) {
	m.mu.Lock()
	m.secrets = rs
	m.mu.Unlock()
}

// redact returns err with every expanded secret of the current transport
// replaced (tooling.Redact).
func (m *Client) redact(err error) error {
	m.mu.Lock()
	rs := m.secrets
	m.mu.Unlock()
	return tooling.Redact(err, rs)
}
