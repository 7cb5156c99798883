// Package status is the daemon's state as it reports it: each agent, each
// tooling and this host's view of the cluster. The control API serves
// these as JSON (control.AgentStatus and the others are these types) and
// metrics reads them at scrape time; neither needs the other for them.
package status

import "time"

// Agent is one agent as /v1/agents reports it.
type Agent struct {
	Name      string    `json:"name"`
	Component string    `json:"component"`
	Toolings  []string  `json:"toolings"`
	State     string    `json:"state"` // starting|running|idle|stopping|stopped|exited|failed|backoff
	Restarts  int       `json:"restarts"`
	Traps     int       `json:"traps"`
	Inbox     int       `json:"inbox_depth"`
	LastError string    `json:"last_error,omitempty"`
	Since     time.Time `json:"since"` // when State was entered
	// Instances are its live instances: the one of a single agent while it
	// runs, one per session of a per-session agent.
	Instances []Instance `json:"instances,omitempty"`
	// Oplog is what a durable agent's oplogs hold on this host (nil for
	// an agent that is not durable).
	Oplog *Oplog `json:"oplog,omitempty"`
}

// Oplog is what a durable agent's oplogs hold: its instance's, or the
// sum over the sessions of a per-session agent.
type Oplog struct {
	Entries int   `json:"entries"`
	Bytes   int64 `json:"bytes"` // their stored size
	// Logs is how many sessions of a per-session agent have one (left
	// out for other agents, and when none has).
	Logs int `json:"logs,omitempty"`
}

// Instance is one live instance of an agent.
type Instance struct {
	// Session is the session it serves ("" for a single agent's instance
	// or a one-off message's).
	Session string    `json:"session,omitempty"`
	State   string    `json:"state"` // starting|running|stopping
	Since   time.Time `json:"since"`
	// Messages counts the messages it answered.
	Messages     uint64    `json:"messages_handled"`
	LastActivity time.Time `json:"last_activity"`
}

// Tooling is one tooling as /v1/toolings reports it.
type Tooling struct {
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

// Cluster is /v1/cluster: this host's view of the cluster.
type Cluster struct {
	Name      string    `json:"name"` // this member
	Joined    bool      `json:"joined"`
	Fencing   bool      `json:"fencing"`
	Lease     int64     `json:"lease"`
	LastRenew time.Time `json:"last_renew"`
	Digest    string    `json:"config_digest"` // sha256 of this host's config file
	Members   []Member  `json:"members"`
	// Owners maps each agent that has an ownership key to its host.
	Owners map[string]string `json:"owners"`
	Owned  []string          `json:"owned"` // the agents this host holds
	// ClusterCounts are embedded: their fields encode in this object.
	ClusterCounts
}

// ClusterCounts are what a cluster host counted since it started: its
// claims, moves, fences and losses of agents, and its etcd requests, as
// /v1/cluster reports them (flat in Cluster) and metrics exports them.
type ClusterCounts struct {
	Claims uint64 `json:"claims"` // ownership keys claimed
	Moves  uint64 `json:"moves"`  // agents handed over to another member
	Fences uint64 `json:"fences"` // sessions ended by self-fencing
	Lost   uint64 `json:"lost"`   // agents stopped because their key vanished
	// Requests counts the etcd requests this host made.
	Requests int64 `json:"etcd_requests"`
}

// Member is one live member of the cluster.
type Member struct {
	Name       string            `json:"name"`
	Digest     string            `json:"config_digest"`
	SameConfig bool              `json:"same_config"` // its digest is this host's
	Settled    bool              `json:"settled"`     // counts for placement
	Agents     map[string]string `json:"agents"`      // its agents by state
	// Address is its control API's URL, where messages for its agents
	// are forwarded ("" : none published).
	Address string `json:"address,omitempty"`
	// Sessions are its per-session instances: agent -> session -> state.
	Sessions map[string]map[string]string `json:"sessions,omitempty"`
}
