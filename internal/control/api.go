// Package control is toolhostd's control plane: the JSON HTTP API served on
// a unix socket (and optionally on TCP behind a bearer token), its client
// used by the CLI (`toolhostd ps`, `agent`, `toolings`, `reload`), and the
// health, readiness and metrics endpoints. It knows the daemon only through
// the Backend interface.
package control

import (
	"errors"
	"time"
)

// AgentStatus is one agent as /v1/agents reports it.
type AgentStatus struct {
	Name      string    `json:"name"`
	Component string    `json:"component"`
	Toolings  []string  `json:"toolings"`
	State     string    `json:"state"` // starting|running|stopping|stopped|exited|failed|backoff
	Restarts  int       `json:"restarts"`
	Traps     int       `json:"traps"`
	Inbox     int       `json:"inbox_depth"`
	LastError string    `json:"last_error,omitempty"`
	Since     time.Time `json:"since"` // when State was entered
}

// ToolingStatus is one tooling as /v1/toolings reports it.
type ToolingStatus struct {
	Name          string `json:"name"`
	Kind          string `json:"kind"`
	Transport     string `json:"transport"`
	State         string `json:"state"` // connecting|connected|disconnected
	ConnectedOnce bool   `json:"connected_once"`
	ServerName    string `json:"server_name,omitempty"`
	ServerVersion string `json:"server_version,omitempty"`
	Tools         int    `json:"tools"`
	InFlight      int    `json:"in_flight"`
	Restarts      int    `json:"restarts"`
	LastError     string `json:"last_error,omitempty"`
	// Progress counts the progress notifications the server sent about
	// calls.
	Progress uint64 `json:"progress_notifications"`
}

// Backend is what the control API drives: the running daemon.
type Backend interface {
	Agents() []AgentStatus
	Toolings() []ToolingStatus
	// StartAgent, StopAgent and RestartAgent return ErrUnknownAgent for a
	// name that is not configured.
	StartAgent(name string) error
	StopAgent(name string) error
	RestartAgent(name string) error
	// Reload re-reads and validates the config; on error the old one keeps
	// running and the error says why.
	Reload() error
	// Ready reports whether every agent has started (or failed to load)
	// and every tooling has connected at least once.
	Ready() bool
}

// ErrUnknownAgent is returned by the Backend for an agent it does not have.
var ErrUnknownAgent = errors.New("no such agent")

// ClusterStatus is /v1/cluster: this host's view of the cluster.
type ClusterStatus struct {
	Name      string          `json:"name"` // this member
	Joined    bool            `json:"joined"`
	Fencing   bool            `json:"fencing"`
	Lease     int64           `json:"lease"`
	LastRenew time.Time       `json:"last_renew"`
	Digest    string          `json:"config_digest"` // sha256 of this host's config file
	Members   []ClusterMember `json:"members"`
	// Owners maps each agent that has an ownership key to its host.
	Owners map[string]string `json:"owners"`
	Owned  []string          `json:"owned"` // the agents this host holds
	Claims uint64            `json:"claims"`
	Moves  uint64            `json:"moves"`
	Fences uint64            `json:"fences"`
	Lost   uint64            `json:"lost"`
	// Requests counts the etcd requests this host made.
	Requests int64 `json:"etcd_requests"`
}

// ClusterMember is one live member.
type ClusterMember struct {
	Name       string            `json:"name"`
	Digest     string            `json:"config_digest"`
	SameConfig bool              `json:"same_config"` // its digest is this host's
	Settled    bool              `json:"settled"`     // counts for placement
	Agents     map[string]string `json:"agents"`      // its agents by state
}

// ClusterBackend is a Backend that may be a cluster host: /v1/cluster
// reports its view, 404 when ok is false.
type ClusterBackend interface {
	Cluster() (st ClusterStatus, ok bool)
}
