package daemon

// The key-value store (package kv, opened by package system): each
// instance's wasi:keyvalue store.open bound to its agent, its session and
// its agent's [agent.X] stores and store; the operators' side for the
// control API.

import (
	"github.com/toolhostd/toolhostd/internal/kv"
)

// KV is the key-value store, for the control API's /v1/kv routes.
func (d *Daemon) KV() *kv.Service { return d.sys.KV }

// openBucket is an instance's store.open: the agent's buckets under the
// policy of the config the service started with (a reload that changes
// stores or store restarts the agent, whose new instances get the new
// one); session is a per-session instance's session ("" for the others),
// whose open("session") is that session's own bucket.
func (s *agentService) openBucket(session string) func(identifier string) (*kv.Bucket, error) {
	svc, name, pol := s.d.sys.KV, s.r.name, kv.PolicyOf(s.cfg)
	if svc == nil {
		return nil
	}
	return func(identifier string) (*kv.Bucket, error) { return svc.Open(name, session, pol, identifier) }
}
