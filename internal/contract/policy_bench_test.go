package contract_test

import (
	"context"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/audit"
	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/policy"
)

// benchRules is a grant as an operator might write one: a few tool globs,
// a deny, resource globs and both limits (high enough never to refuse).
var benchRules = map[string]policy.Rules{"mem": {
	Tools:              []string{"read_*", "list_*", "search_files", "echo", "get_*"},
	DenyTools:          []string{"read_media_file"},
	Resources:          []string{"test://**"},
	MaxConcurrentCalls: 64,
	CallsPerSecond:     1e6,
}}

// BenchmarkPolicyCall is what the grant policy costs a call: one blocking
// echo call through the pump on the same in-process go-sdk server, with no
// policy (baseline), with benchRules (policy), and with benchRules and the
// audit log written to a file (policy-audit). check is the policy check
// alone (tool glob, concurrency slot, token bucket, release), with no call.
func BenchmarkPolicyCall(b *testing.B) {
	ctx := context.Background()
	const args = `{"text":"hello"}`
	run := func(b *testing.B, pol *policy.Agent, withAudit bool) {
		e := newEnv(b, envOptions{log: zap.NewNop()})
		opts := contract.Options{Policy: pol}
		if withAudit {
			l, err := audit.Open(filepath.Join(b.TempDir(), "audit.jsonl"), 0)
			if err != nil {
				b.Fatal(err)
			}
			actx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); l.Run(actx) }()
			defer func() { cancel(); <-done }()
			opts.Audit = l
		}
		a := contract.NewAgent(e.hub, "bench", inbox.New(64), opts)
		defer a.Close()
		h, err := a.Get("mem")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if _, err := h.CallToolBlocking(ctx, "echo", args); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("baseline", func(b *testing.B) { run(b, nil, false) })
	b.Run("policy", func(b *testing.B) { run(b, policy.New("bench", benchRules, policy.Options{}), false) })
	b.Run("policy-audit", func(b *testing.B) { run(b, policy.New("bench", benchRules, policy.Options{}), true) })
	b.Run("check", func(b *testing.B) {
		// The check alone outruns any configurable rate (1e6/s): a higher
		// one keeps the bucket from emptying; the work per check is the same.
		rules := benchRules["mem"]
		rules.CallsPerSecond = 1e9
		v := policy.New("bench", map[string]policy.Rules{"mem": rules}, policy.Options{}).View("mem")
		b.ReportAllocs()
		for b.Loop() {
			if err := v.Tool("call-tool", "echo"); err != nil {
				b.Fatal(err)
			}
			if err := v.Acquire(); err != nil {
				b.Fatal(err)
			}
			v.Release()
		}
	})
}
