package provider_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/provider/providertest"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// clock is a settable time for the budgets' windows and the rate bucket.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// recorder counts what the Limited reports.
type recorder struct {
	mu      sync.Mutex
	denied  []string
	limited []string
}

func (r *recorder) PolicyDenied(agent, p, op string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.denied = append(r.denied, agent+"/"+p+"/"+op)
}

func (r *recorder) AgentLimited(agent, p, limit string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.limited = append(r.limited, agent+"/"+p+"/"+limit)
}

var hi = provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}}}

type limitedEnv struct {
	srv *providertest.Server
	p   provider.Provider
	clk *clock
	rec *recorder
}

func newLimitedEnv(t *testing.T, api providertest.API) *limitedEnv {
	srv := providertest.New(t, api)
	// Every default answer uses 12 + 4 = 16 tokens.
	return &limitedEnv{srv: srv, p: open(t, srv, nil), clk: &clock{now: time.Date(2026, 12, 4, 10, 0, 30, 0, time.UTC)}, rec: &recorder{}}
}

func (e *limitedEnv) limited(t *testing.T, g *config.ProviderGrant, b *provider.Budgets) *provider.Limited {
	t.Helper()
	l, err := provider.NewLimited(e.p, "thinker", g, provider.LimitOptions{Budgets: b, Recorder: e.rec, Now: e.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// refused checks that a request fails at once with code, naming limit,
// and that nothing reached the server.
func refused(t *testing.T, e *limitedEnv, l *provider.Limited, req provider.Request, code tooling.ErrorCode, limit string) {
	t.Helper()
	before := len(e.srv.Requests())
	_, err := l.Chat(context.Background(), req)
	if err == nil || codeOf(t, err) != code || !strings.Contains(err.Error(), limit) {
		t.Fatalf("want %v naming %s, got %v", code, limit, err)
	}
	if n := len(e.srv.Requests()); n != before {
		t.Errorf("a refused request was sent (%d requests, was %d)", n, before)
	}
}

func admitted(t *testing.T, l *provider.Limited, req provider.Request) provider.Response {
	t.Helper()
	r, err := l.Chat(context.Background(), req)
	if err != nil {
		t.Fatalf("want admitted, got %v", err)
	}
	return r
}

func TestLimitModels(t *testing.T) {
	for _, api := range apis {
		t.Run(api.String(), func(t *testing.T) {
			e := newLimitedEnv(t, api)
			l := e.limited(t, &config.ProviderGrant{Models: []string{"fake-model-*", "gpt-4o"}}, nil)
			admitted(t, l, hi) // the default model, fake-model-1
			req := hi
			req.Model = "gpt-4o"
			admitted(t, l, req)
			req.Model = "gpt-4o-mini"
			refused(t, e, l, req, tooling.CodeDenied, `agent.thinker.grants.fake.models ["fake-model-*", "gpt-4o"] has no match`)
			l.Update(&config.ProviderGrant{Models: []string{}})
			refused(t, e, l, hi, tooling.CodeDenied, `model "fake-model-1" is not granted`)
			if len(e.rec.denied) != 2 || e.rec.denied[0] != "thinker/fake/chat" {
				t.Errorf("denials recorded: %v", e.rec.denied)
			}
		})
	}
}

func TestLimitConcurrent(t *testing.T) {
	e := newLimitedEnv(t, providertest.OpenAI)
	l := e.limited(t, &config.ProviderGrant{MaxConcurrentCalls: 1}, nil)
	e.srv.Script(providertest.Reply{Text: []string{"slow"}, Delay: 500 * time.Millisecond})
	done := make(chan error, 1)
	go func() { _, err := l.ChatStream(context.Background(), hi, func(string) {}); done <- err }()
	testenv.Eventually(t, 10*time.Second, "the request at the server", func() bool { return len(e.srv.Requests()) > 0 })
	refused(t, e, l, hi, tooling.CodeBusy, "agent.thinker.grants.fake.max_concurrent_calls = 1")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	admitted(t, l, hi) // the slot came back
	if len(e.rec.limited) != 1 || e.rec.limited[0] != "thinker/fake/max_concurrent_calls" {
		t.Errorf("limits recorded: %v", e.rec.limited)
	}
}

func TestLimitRate(t *testing.T) {
	e := newLimitedEnv(t, providertest.Anthropic)
	l := e.limited(t, &config.ProviderGrant{RequestsPerMinute: 2}, nil)
	admitted(t, l, hi)
	admitted(t, l, hi)
	refused(t, e, l, hi, tooling.CodeBusy, "requests_per_minute = 2")
	e.clk.Add(30 * time.Second) // one request's worth
	admitted(t, l, hi)
	refused(t, e, l, hi, tooling.CodeBusy, "requests_per_minute")
}

func TestLimitTokens(t *testing.T) {
	for _, tc := range []struct {
		name   string
		grant  config.ProviderGrant
		limit  string
		notYet time.Duration // still refused this long after
		after  time.Duration // admitted again this long after
	}{
		{"tokens_per_hour", config.ProviderGrant{TokensPerHour: 20}, "tokens_per_hour = 20", 58 * time.Minute, 61 * time.Minute},
		{"tokens_per_day", config.ProviderGrant{TokensPerDay: 20, TokensPerHour: 1000}, "tokens_per_day = 20", 23 * time.Hour, 25 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newLimitedEnv(t, providertest.OpenAI)
			l := e.limited(t, &tc.grant, nil)
			admitted(t, l, hi) // 16 tokens: under 20
			var deltas []string
			if _, err := l.ChatStream(context.Background(), hi, func(s string) { deltas = append(deltas, s) }); err != nil {
				t.Fatal(err) // 32: the last one admitted takes it over
			}
			if h, d := l.Used(); h != 32 || d != 32 {
				t.Errorf("used %d in the hour, %d in the day; want 32", h, d)
			}
			refused(t, e, l, hi, tooling.CodeBusy, tc.limit)
			e.clk.Add(tc.notYet)
			refused(t, e, l, hi, tooling.CodeBusy, tc.limit)
			e.clk.Add(tc.after - tc.notYet)
			admitted(t, l, hi)
		})
	}
}

func TestLimitMaxTokens(t *testing.T) {
	e := newLimitedEnv(t, providertest.Anthropic)
	l := e.limited(t, &config.ProviderGrant{MaxTokens: 50}, nil)
	for _, tc := range []struct {
		ask  *uint32
		want int
	}{{nil, 50}, {u32(100), 50}, {u32(10), 10}} {
		req := hi
		req.MaxTokens = tc.ask
		admitted(t, l, req)
		if got := e.srv.Last().MaxTokens; got != tc.want {
			t.Errorf("asked %v: the API got max_tokens %d, want %d", tc.ask, got, tc.want)
		}
	}
}

// TestBudgetsPersist: the counters survive a restart (a new Budgets on
// the same directory), in a file only the daemon's user reads.
func TestBudgetsPersist(t *testing.T) {
	dir := provider.BudgetsDir(t.TempDir())
	e := newLimitedEnv(t, providertest.OpenAI)
	g := &config.ProviderGrant{TokensPerHour: 40}
	b, err := provider.OpenBudgets(dir)
	if err != nil {
		t.Fatal(err)
	}
	l := e.limited(t, g, b)
	admitted(t, l, hi)
	admitted(t, l, hi) // 32

	fi, err := os.Stat(filepath.Join(dir, "thinker.fake.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("budget file: %v, %v", fi, err)
	}
	b2, err := provider.OpenBudgets(dir) // the next daemon
	if err != nil {
		t.Fatal(err)
	}
	l2 := e.limited(t, g, b2)
	if h, _ := l2.Used(); h != 32 {
		t.Fatalf("after a reopen: used %d, want 32", h)
	}
	admitted(t, l2, hi) // 48
	refused(t, e, l2, hi, tooling.CodeBusy, "tokens_per_hour = 40")
	other := e.limited(t, g, b2) // another Limited of the same pair shares the counter
	refused(t, e, other, hi, tooling.CodeBusy, "tokens_per_hour")

	if err := os.WriteFile(filepath.Join(dir, "broken.fake.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := provider.NewLimited(e.p, "broken", g, provider.LimitOptions{Budgets: b2}); err == nil || !strings.Contains(err.Error(), "broken.fake.json") {
		t.Errorf("a corrupt budget file: %v", err)
	}
}
