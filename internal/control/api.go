// Package control is toolhostd's control plane: the JSON HTTP API served on
// a unix socket (and optionally on TCP behind a bearer token), its client
// used by the CLI (`toolhostd ps`, `agent`, `toolings`, `reload`), and the
// health, readiness and metrics endpoints. It knows the daemon only through
// the Backend interface.
package control

import (
	"errors"

	"github.com/toolhostd/toolhostd/internal/status"
)

// The reports of the API: the daemon's state (package status).
type (
	AgentStatus   = status.Agent
	ToolingStatus = status.Tooling
	ClusterStatus = status.Cluster
	ClusterMember = status.Member
)

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

// ConfigBackend is a Backend that also knows the agents it does not list:
// a cluster host lists the agents it holds, while every agent of the
// config (wherever it runs) may keep keys in the shared store.
type ConfigBackend interface {
	// Configured reports whether name is an agent of the config.
	Configured(name string) bool
}

// ErrUnknownAgent is returned by the Backend for an agent it does not have.
var ErrUnknownAgent = errors.New("no such agent")

// ClusterBackend is a Backend that may be a cluster host: /v1/cluster
// reports its view, 404 when ok is false.
type ClusterBackend interface {
	Cluster() (st ClusterStatus, ok bool)
}
