package daemon

// The key-value store (package kv, opened by package system, which also
// binds each instance's wasi:keyvalue store.open: System.AgentConfig):
// the operators' side for the control API.

import (
	"github.com/toolhostd/toolhostd/internal/kv"
	"github.com/toolhostd/toolhostd/internal/tracing"
)

// KV is the key-value store, for the control API's /v1/kv routes.
func (d *Daemon) KV() *kv.Service { return d.g.KV }

// Traces is the store of the last traces; nil when tracing is off.
func (d *Daemon) Traces() *tracing.Recent { return d.g.Tracing.Recent() }
