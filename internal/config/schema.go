// Package config owns toolhostd's TOML configuration: the schema, strict
// decoding (unknown keys are errors), defaults, validation that reports every
// problem with file:line:col and the key path, and the expansion of
// `${env:NAME}` and `${file:/path}` secrets at the moment they are used.
package config

import "time"

// Config is one parsed and validated toolhostd.toml.
type Config struct {
	Version int                 `toml:"version"`
	Host    Host                `toml:"host"`
	Tooling map[string]*Tooling `toml:"tooling"`
	Agent   map[string]*Agent   `toml:"agent"`
	// Provider is the model endpoints, by name (provider.go).
	Provider map[string]*Provider `toml:"provider" json:",omitempty"`
	// Cluster is [cluster] (cluster.go); nil: a single host.
	Cluster *Cluster `toml:"cluster" json:",omitempty"`
	// Peer is the remote A2A agents local agents may send to, by name
	// (peer.go).
	Peer map[string]*Peer `toml:"peer" json:",omitempty"`

	// Path is the file the config was read from ("" when parsed from bytes
	// without a name).
	Path string `toml:"-"`

	// componentAt is where each agent's component is written (files.go).
	componentAt map[string]pos
}

// Host is the [host] table.
type Host struct {
	LogLevel  string `toml:"log_level"`  // debug|info|warn|error
	LogFormat string `toml:"log_format"` // console|json
	CacheDir  string `toml:"cache_dir"`  // default $XDG_CACHE_HOME/toolhostd

	// HostControl is where the control API listens (control_socket,
	// control_listen, control_token).
	HostControl

	// AuditLog is the audit log's path ("-": stderr; "": none).
	AuditLog string `toml:"audit_log" json:",omitempty"`

	// StateDir keeps state that outlives a process, such as OAuth tokens
	// (default: see Config.StateDir).
	StateDir string `toml:"state_dir" json:",omitempty"`
	// MaxThreads bounds the process's OS threads (runtime/debug's
	// SetMaxThreads): every agent waiting in recv or a blocking host call
	// holds one, so it bounds the agents one host can run.
	MaxThreads int `toml:"max_threads"`
	// MessageRetention is how long a message's reply is kept after it
	// ended, for GET and resumption by id and for idempotency keys.
	MessageRetention Duration `toml:"message_retention"`
	// MCP and A2A serve the agents exposed over them (protocols.go); nil:
	// not served.
	MCP *Endpoint `toml:"mcp,omitempty" json:",omitempty"`
	A2A *Endpoint `toml:"a2a,omitempty" json:",omitempty"`

	// Store is the key-value store's backend (store.go).
	Store HostStore `toml:"store"`

	// Traces configures OpenTelemetry traces (traces.go); nil: only the
	// OTEL_* environment turns them on.
	Traces *Traces `toml:"traces,omitempty" json:",omitempty"`
}

// HostControl is where [host] serves the control API.
type HostControl struct {
	// ControlSocket is the control API's unix socket (default: see
	// control.DefaultSocket).
	ControlSocket string `toml:"control_socket"`
	// ControlListen is an optional TCP address (host:port) for the control
	// API; it requires ControlToken.
	ControlListen string `toml:"control_listen"`
	// ControlToken is the bearer token of the TCP control API, usually a
	// ${env:...} or ${file:...} reference: call Expand at use.
	ControlToken string `toml:"control_token"`
}

// Tooling is one [tooling.<name>] table. String values that may hold
// secrets (env, headers, args, url) keep their `${env:...}` / `${file:...}`
// references; call Expand at use.
type Tooling struct {
	Name string `toml:"-"` // the <name> of [tooling.<name>]

	Kind            string  `toml:"kind"`      // "mcp"
	Transport       string  `toml:"transport"` // stdio|http|sse
	ToolingProcess          // command, args, env, cwd (stdio)
	ToolingEndpoint         // url, headers (http, sse)
	ToolingCalls            // connect_timeout, call_timeout, max_concurrent_calls
	Restart         Restart `toml:"restart"`
	ToolingSession          // max_message_bytes, ping_interval, ping_timeout (session.go)
	ToolingClient           // roots, elicitation, sampling, log_level (client.go)
	// OAuth makes the server an OAuth-protected resource (http and sse only).
	OAuth *OAuth `toml:"oauth" json:",omitempty"`
}

// ToolingProcess is the server process of a stdio tooling.
type ToolingProcess struct {
	Command string            `toml:"command"`
	Args    []string          `toml:"args"`
	Env     map[string]string `toml:"env"`
	Cwd     string            `toml:"cwd"`
}

// ToolingEndpoint is the server of an http or sse tooling.
type ToolingEndpoint struct {
	URL     string            `toml:"url"`
	Headers map[string]string `toml:"headers"`
}

// ToolingCalls bound a tooling's connecting and calls.
type ToolingCalls struct {
	ConnectTimeout     Duration `toml:"connect_timeout"`
	CallTimeout        Duration `toml:"call_timeout"`
	MaxConcurrentCalls int      `toml:"max_concurrent_calls"`
}

// ToolingSession bounds a tooling's session: its messages and liveness.
type ToolingSession struct {
	MaxMessageBytes ByteSize `toml:"max_message_bytes"` // one JSON-RPC message from the server
	PingInterval    Duration `toml:"ping_interval"`     // liveness check: a ping this often
	PingTimeout     Duration `toml:"ping_timeout"`      // that must be answered this fast
}

// ToolingClient is what the client offers the server (client.go).
type ToolingClient struct {
	Roots       []string `toml:"roots,omitempty"` // file:// URIs; paths are made URIs at load
	Elicitation string   `toml:"elicitation"`     // decline|accept-defaults
	// Sampling, when set, offers the server MCP sampling, answered by a
	// provider (sampling.go); nil: sampling/createMessage is refused.
	Sampling *Sampling `toml:"sampling,omitempty" json:",omitempty"`
	LogLevel string    `toml:"log_level,omitempty"` // MCP level asked with logging/setLevel; "" asks none
}

// Restart is a tooling's session restart policy.
type Restart struct {
	InitialBackoff Duration `toml:"initial_backoff"`
	MaxBackoff     Duration `toml:"max_backoff"`
	HealthyAfter   Duration `toml:"healthy_after"`
}

// Agent is one [agent.<name>] table (used by `toolhostd serve`).
type Agent struct {
	Name string `toml:"-"`

	Component    string            `toml:"component"`
	Toolings     []string          `toml:"toolings"`
	Input        string            `toml:"input"`
	Env          map[string]string `toml:"env"`
	AgentRestart                   // restart, restart_backoff
	AgentBounds                    // inbox_capacity, limits, stop_grace
	// AgentGrants narrow what the agent may get: its toolings' grants,
	// the providers and their grants.
	AgentGrants
	// Messaging is who may talk to the agent and how its instances are
	// made (messages.go).
	Messaging
	AgentStore   // stores, store: its key-value buckets (store.go)
	AgentDurable // durable, max_oplog (durable.go)
}

// AgentRestart is when and how fast an agent's instance is started again.
type AgentRestart struct {
	Restart        string  `toml:"restart"` // never|on-failure|always
	RestartBackoff Backoff `toml:"restart_backoff"`
}

// AgentBounds bound an agent's instance: its inbox, its resources and
// its time to stop.
type AgentBounds struct {
	InboxCapacity int      `toml:"inbox_capacity"`
	Limits        Limits   `toml:"limits"`
	StopGrace     Duration `toml:"stop_grace"`
}

// AgentGrants are what an agent may get beyond its toolings' names: the
// narrowing of each tooling, the providers and their limits.
type AgentGrants struct {
	// Grants narrow the toolings granted, by tooling name (grants.go).
	Grants map[string]*Grant `toml:"grants" json:",omitempty"`
	// Providers are the providers the agent may get; each names a
	// [provider.X]. None when left out.
	Providers []string `toml:"providers" json:",omitempty"`
	// ProviderGrants are the agent's limits on the providers granted, by
	// provider name: the [agent.X.grants.P] tables whose P is a provider
	// (toolings and providers share one namespace).
	ProviderGrants map[string]*ProviderGrant `toml:"-" json:",omitempty"`
}

// Backoff is an initial and a maximum delay.
type Backoff struct {
	Initial Duration `toml:"initial"`
	Max     Duration `toml:"max"`
}

// Limits bound one agent's store; zero means unlimited.
type Limits struct {
	Memory     ByteSize `toml:"memory"`
	Fuel       uint64   `toml:"fuel"`
	RunTimeout Duration `toml:"run_timeout"`
	// LogRate is how many guest log lines (log.write, stdout, stderr
	// lines) per second the agent may write on average, LogBurst how many
	// at once; lines over it are dropped and counted. LogRate 0: unlimited.
	LogRate  float64 `toml:"log_rate"`
	LogBurst int     `toml:"log_burst"`
}

// Duration is a time.Duration written as a Go duration string ("250ms").
type Duration struct{ time.Duration }

// ByteSize is a size in bytes written as an integer or with a unit
// ("256MiB", "1GB", "4096").
type ByteSize uint64
