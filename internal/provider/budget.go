package provider

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/toolhostd/toolhostd/internal/audit"
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/limit"
	"github.com/toolhostd/toolhostd/internal/policy"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// LimitOptions are the optional parts of a Limited.
type LimitOptions struct {
	// Budgets keeps the token counters (nil: in memory, lost on restart).
	Budgets *Budgets
	// Recorder counts denials and refusals over a limit (nil: none).
	Recorder policy.Recorder
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// ModelsFrom, if set, is how a denied model's message names where the
	// grant's models come from (`run`'s --provider flag); by default the
	// table and its list, agent.A.grants.P.models [...].
	ModelsFrom string
}

// Limited is a Provider under one agent's grant on it
// ([agent.A.grants.P]): the models it may ask for, how many requests it
// may have running and how fast it may make them, the tokens (input +
// output, from each response's usage) it may use per hour and per day, and
// the cap of a request's max_tokens. A request over a limit fails at once,
// before anything is sent: denied for a model the grant does not allow,
// busy (naming the limit) for the others. A request is refused once the
// budget is used up, so the last one admitted may take it past the limit
// by its own usage.
type Limited struct {
	p     Provider
	agent string
	opts  LimitOptions
	count *counter
	lim   *limit.Limiter // max_concurrent_calls and requests_per_minute

	grant atomic.Pointer[grantState]
}

type grantState struct {
	g      config.ProviderGrant
	models []policy.Pattern
	name   string // "agent.A.grants.P", for messages
}

// NewLimited wraps p (the provider called p.Name()) with agent's grant g
// (nil: no limits). The token counters are the Budgets' for the agent and
// the provider, shared by every Limited of the pair and read from disk if
// a former daemon left some.
func NewLimited(p Provider, agent string, g *config.ProviderGrant, o LimitOptions) (*Limited, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	l := &Limited{p: p, agent: agent, opts: o, lim: limit.New(limit.Limits{}, o.Now)}
	var err error
	if o.Budgets != nil {
		l.count, err = o.Budgets.counter(agent, p.Name())
	} else {
		l.count = &counter{}
	}
	if err != nil {
		return nil, err
	}
	l.Update(g)
	return l, nil
}

// Update replaces the grant: requests from now on see the new one; the
// counters and the rate bucket carry over under the new numbers.
func (l *Limited) Update(g *config.ProviderGrant) {
	st := &grantState{name: fmt.Sprintf("agent.%s.grants.%s", l.agent, l.p.Name())}
	if g != nil {
		st.g = *g
		for _, m := range g.Models {
			st.models = append(st.models, policy.Compile(m))
		}
	}
	l.lim.Set(limit.Limits{MaxConcurrent: st.g.MaxConcurrentCalls, N: st.g.RequestsPerMinute, Per: time.Minute})
	l.grant.Store(st)
}

func (l *Limited) Kind() string { return l.p.Kind() }
func (l *Limited) Name() string { return l.p.Name() }

// DefaultModel is the wrapped provider's.
func (l *Limited) DefaultModel() string { return DefaultModel(l.p) }

// Used is the tokens used over the last hour and the last 24 hours.
func (l *Limited) Used() (hour, day int64) {
	now := l.opts.Now()
	return l.count.used(now, time.Hour), l.count.used(now, 24*time.Hour)
}

func (l *Limited) Chat(ctx context.Context, req Request) (Response, error) {
	if err := l.admit(&req); err != nil {
		return Response{}, err
	}
	defer l.lim.Release()
	resp, err := l.p.Chat(ctx, req)
	return resp, l.charge(resp, err)
}

func (l *Limited) ChatStream(ctx context.Context, req Request, delta func(string)) (Response, error) {
	if err := l.admit(&req); err != nil {
		return Response{}, err
	}
	defer l.lim.Release()
	resp, err := l.p.ChatStream(ctx, req, delta)
	return resp, l.charge(resp, err)
}

// admit checks req against the grant and caps its max_tokens; on nil the
// request holds a slot of max_concurrent_calls until the caller's
// lim.Release.
func (l *Limited) admit(req *Request) error {
	st := l.grant.Load()
	g := &st.g
	model := req.Model
	if model == "" {
		model = DefaultModel(l.p)
	}
	if g.Models != nil && !anyMatch(st.models, model) {
		if r := l.opts.Recorder; r != nil {
			r.PolicyDenied(l.agent, l.p.Name(), audit.OpChat) // as the audit line names it
		}
		from := l.opts.ModelsFrom
		if from == "" {
			from = fmt.Sprintf("%s.models [%s]", st.name, quoted(g.Models))
		}
		return tooling.Errorf(tooling.CodeDenied, "model %q is not granted to agent %q on provider %q: %s has no match",
			model, l.agent, l.p.Name(), from)
	}
	busy := func(name, format string, args ...any) error {
		if r := l.opts.Recorder; r != nil {
			r.AgentLimited(l.agent, l.p.Name(), name)
		}
		return tooling.Errorf(tooling.CodeBusy, format, args...)
	}
	if n, ok := l.lim.Enter(); !ok {
		return busy(limit.Concurrent, "agent %q already has %d requests running on provider %q: %s.max_concurrent_calls = %d",
			l.agent, n, l.p.Name(), st.name, l.lim.Limits().MaxConcurrent)
	}
	refuse := func(name, format string, args ...any) error {
		l.lim.Release()
		return busy(name, format, args...)
	}
	now := l.opts.Now()
	if g.TokensPerHour > 0 {
		if used := l.count.used(now, time.Hour); used >= g.TokensPerHour {
			return refuse(limit.TokensPerHour, "agent %q has used %d tokens on provider %q in the last hour: over its budget %s.tokens_per_hour = %d",
				l.agent, used, l.p.Name(), st.name, g.TokensPerHour)
		}
	}
	if g.TokensPerDay > 0 {
		if used := l.count.used(now, 24*time.Hour); used >= g.TokensPerDay {
			return refuse(limit.TokensPerDay, "agent %q has used %d tokens on provider %q in the last 24 hours: over its budget %s.tokens_per_day = %d",
				l.agent, used, l.p.Name(), st.name, g.TokensPerDay)
		}
	}
	if !l.lim.Take() {
		return refuse(limit.RequestsPerMinute, "agent %q is over its request rate on provider %q: %s.requests_per_minute = %g",
			l.agent, l.p.Name(), st.name, l.lim.Limits().N)
	}
	if g.MaxTokens > 0 && (req.MaxTokens == nil || *req.MaxTokens > uint32(g.MaxTokens)) {
		capped := uint32(g.MaxTokens)
		req.MaxTokens = &capped
	}
	return nil
}

// charge counts a response's tokens; a failure to keep the count is the
// request's error only when the request itself succeeded.
func (l *Limited) charge(resp Response, err error) error {
	if err != nil {
		return err
	}
	n := int64(resp.Usage.InputTokens) + int64(resp.Usage.OutputTokens)
	if n == 0 {
		return nil
	}
	if serr := l.count.add(l.opts.Now(), n); serr != nil {
		return tooling.Errorf(tooling.CodeInternal, "provider %q: keeping agent %q's token budget: %w", l.p.Name(), l.agent, serr)
	}
	return nil
}

func anyMatch(ps []policy.Pattern, s string) bool {
	for _, p := range ps {
		if p.Match(s) {
			return true
		}
	}
	return false
}

func quoted(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(out, ", ")
}
