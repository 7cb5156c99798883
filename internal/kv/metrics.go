package kv

// Counts of operations by kind and outcome, for the daemon's metrics.

import (
	"context"
	"errors"
	"sync/atomic"
)

type opKind int

const (
	opOpen opKind = iota
	opGet
	opSet
	opDelete
	opExists
	opList
	opIncrement
	opCAS
	opSwap
	opGetMany
	opSetMany
	opDeleteMany
	opAdmin
	numOps
)

// opNames are the operations' names in metrics and logs.
var opNames = [numOps]string{"open", "get", "set", "delete", "exists", "list_keys", "increment",
	"cas", "swap", "get_many", "set_many", "delete_many", "admin"}

type outcome int

const (
	outcomeOK outcome = iota
	outcomeNoSuchStore
	outcomeDenied
	outcomeQuota
	outcomeCASFailed
	outcomeError
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "no_such_store", "access_denied", "quota", "cas_failed", "error"}

func outcomeOf(err error) outcome {
	var q *QuotaError
	switch {
	case err == nil:
		return outcomeOK
	case errors.Is(err, ErrNoSuchStore):
		return outcomeNoSuchStore
	case errors.Is(err, ErrAccessDenied):
		return outcomeDenied
	case errors.As(err, &q):
		return outcomeQuota
	case errors.Is(err, ErrCASFailed):
		return outcomeCASFailed
	}
	return outcomeError
}

type counters [numOps][numOutcomes]atomic.Uint64

func (c *counters) add(op opKind, err error) { c[op][outcomeOf(err)].Add(1) }

// OpCount is how many operations of a kind ended with an outcome ("ok",
// "no_such_store", "access_denied", "quota", "cas_failed", "error").
type OpCount struct {
	Op, Outcome string
	N           uint64
}

// Ops are the operations counted since New, the non-zero counts in a
// fixed order (for a metric kv_operations_total{op,outcome}).
func (s *Service) Ops() []OpCount {
	var out []OpCount
	for op := range numOps {
		for o := range numOutcomes {
			if n := s.ops[op][o].Load(); n > 0 {
				out = append(out, OpCount{Op: opNames[op], Outcome: outcomeNames[o], N: n})
			}
		}
	}
	return out
}

// AgentUsage is what one agent keeps.
type AgentUsage struct {
	Agent string
	Usage
}

// Usage is what each agent keeps (for gauges kv_keys{agent} and
// kv_bytes{agent}).
func (s *Service) Usage(ctx context.Context) ([]AgentUsage, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	agents, err := s.store.Agents(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]AgentUsage, 0, len(agents))
	for _, a := range agents {
		u, err := s.store.Usage(ctx, a)
		if err != nil {
			return nil, err
		}
		out = append(out, AgentUsage{Agent: a, Usage: u})
	}
	return out, nil
}
