package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Client talks to a running toolhostd's control API. Its methods are safe
// for concurrent use.
type Client struct {
	where string // the socket path or TCP address, for messages
	base  string // URL prefix
	token string // bearer token (TCP)
	hc    *http.Client
}

// APIError is an error answer of the control API.
type APIError struct {
	Status  int    // HTTP status code
	Message string // the "error" field
}

func (e *APIError) Error() string { return e.Message }

// Unwrap maps the status to the package's sentinels: 404 on an agent is
// ErrUnknownAgent, 401 and 403 are ErrUnauthorized, 409 ErrConflict.
func (e *APIError) Unwrap() error {
	switch e.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return ErrUnauthorized
	case http.StatusConflict:
		return ErrConflict
	}
	return nil
}

// agentError is an APIError about a named agent (a 404 there means the
// agent is unknown).
type agentError struct{ *APIError }

func (e agentError) Unwrap() []error {
	if e.Status == http.StatusNotFound {
		return []error{e.APIError, ErrUnknownAgent}
	}
	return []error{e.APIError}
}

// Dial returns a client of the daemon listening on the unix socket path
// ("" means DefaultSocket()). It connects once to check that the daemon is
// there: the error then wraps ErrNotRunning and says so.
func Dial(socket string) (*Client, error) {
	if socket == "" {
		socket = DefaultSocket()
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConns:    2,
		IdleConnTimeout: 30 * time.Second,
	}
	c := &Client{where: socket, base: "http://toolhostd", hc: &http.Client{Transport: tr}}
	conn, err := d.Dial("unix", socket)
	if err != nil {
		return nil, c.unreachable(err)
	}
	conn.Close()
	return c, nil
}

// DialTCP returns a client of the TCP control API at addr (host:port)
// sending token as its bearer token. It connects once to check that the
// daemon is there.
func DialTCP(addr, token string) (*Client, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConns: 2, IdleConnTimeout: 30 * time.Second}
	c := &Client{where: addr, base: "http://" + addr, token: token, hc: &http.Client{Transport: tr}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, c.unreachable(err)
	}
	conn.Close()
	return c, nil
}

// Close releases the client's idle connections.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// unreachable explains a failed connection: permission denied wraps
// ErrUnauthorized, anything else ErrNotRunning.
func (c *Client) unreachable(err error) error {
	perm := errors.Is(err, fs.ErrPermission)
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		err = op.Err // "connect: no such file or directory", not the whole dial line
	}
	if perm {
		return &reachError{fmt.Sprintf("cannot reach toolhostd at %s: %v (the socket is for the daemon's user, its group and root)", c.where, err), ErrUnauthorized}
	}
	return &reachError{fmt.Sprintf("cannot reach toolhostd at %s: %v; is it running?", c.where, err), ErrNotRunning}
}

// reachError is a connection failure; it unwraps to its kind.
type reachError struct {
	msg  string
	kind error
}

func (e *reachError) Error() string { return e.msg }
func (e *reachError) Unwrap() error { return e.kind }

// do makes one request and decodes a 2xx JSON answer into out (if not nil).
func (c *Client) do(ctx context.Context, method, path string, out any) error {
	body, err := c.raw(ctx, method, path)
	if err != nil || out == nil {
		return err
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("toolhostd at %s: bad answer to %s %s: %w", c.where, method, path, err)
	}
	return nil
}

// raw makes one request and returns the body of a 2xx answer; any other
// status is an *APIError.
func (c *Client) raw(ctx context.Context, method, path string) ([]byte, error) {
	resp, err := c.send(ctx, method, path, nil, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("toolhostd at %s: reading the answer: %w", c.where, err)
	}
	return body, nil
}

// send makes one request with body (nil: none), its headers set by header
// (nil: none but the token), and returns a 2xx response, its body open;
// any other status is an *APIError.
func (c *Client) send(ctx context.Context, method, path string, body io.Reader, header func(http.Header)) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	injectTrace(ctx, req.Header)
	if header != nil {
		header(req.Header)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, c.unreachable(err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var eb errorBody
	if json.Unmarshal(b, &eb) != nil || eb.Error == "" {
		eb.Error = fmt.Sprintf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	return nil, &APIError{Status: resp.StatusCode, Message: eb.Error}
}

// Cluster is the host's view of its cluster (an *APIError with status 404
// for a host without [cluster]).
func (c *Client) Cluster(ctx context.Context) (ClusterStatus, error) {
	var st ClusterStatus
	err := c.do(ctx, http.MethodGet, "/v1/cluster", &st)
	return st, err
}

// Agents lists the agents.
func (c *Client) Agents(ctx context.Context) ([]AgentStatus, error) {
	var l AgentList
	if err := c.do(ctx, http.MethodGet, "/v1/agents", &l); err != nil {
		return nil, err
	}
	return l.Agents, nil
}

// Agent returns one agent; the error wraps ErrUnknownAgent for a name the
// daemon does not have.
func (c *Client) Agent(ctx context.Context, name string) (AgentStatus, error) {
	var a AgentStatus
	return a, c.agentDo(ctx, http.MethodGet, name, "", &a)
}

// StartAgent starts the agent and returns its status afterwards.
func (c *Client) StartAgent(ctx context.Context, name string) (AgentStatus, error) {
	var a AgentStatus
	return a, c.agentDo(ctx, http.MethodPost, name, "start", &a)
}

// StopAgent stops the agent and returns its status afterwards.
func (c *Client) StopAgent(ctx context.Context, name string) (AgentStatus, error) {
	var a AgentStatus
	return a, c.agentDo(ctx, http.MethodPost, name, "stop", &a)
}

// RestartAgent restarts the agent and returns its status afterwards.
func (c *Client) RestartAgent(ctx context.Context, name string) (AgentStatus, error) {
	var a AgentStatus
	return a, c.agentDo(ctx, http.MethodPost, name, "restart", &a)
}

func (c *Client) agentDo(ctx context.Context, method, name, action string, out any) error {
	path := "/v1/agents/" + url.PathEscape(name)
	if action != "" {
		path += "/" + action
	}
	err := c.do(ctx, method, path, out)
	var ae *APIError
	if errors.As(err, &ae) {
		return agentError{ae}
	}
	return err
}

// Toolings lists the toolings.
func (c *Client) Toolings(ctx context.Context) ([]ToolingStatus, error) {
	var l ToolingList
	if err := c.do(ctx, http.MethodGet, "/v1/toolings", &l); err != nil {
		return nil, err
	}
	return l.Toolings, nil
}

// Reload asks the daemon to re-read its config; the error says why it was
// refused (the old config keeps running then).
func (c *Client) Reload(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/v1/reload", nil)
}

// Health checks /healthz.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/healthz", nil)
}

// Ready reports /readyz: true on 200, false on 503.
func (c *Client) Ready(ctx context.Context) (bool, error) {
	err := c.do(ctx, http.MethodGet, "/readyz", nil)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable {
		return false, nil
	}
	return err == nil, err
}

// Metrics returns the Prometheus text exposition of /metrics.
func (c *Client) Metrics(ctx context.Context) ([]byte, error) {
	return c.raw(ctx, http.MethodGet, "/metrics")
}
