package provider

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tracing"
)

// ModelLister is implemented by the kinds: the models the endpoint offers
// (`toolhostd providers` uses it to check that a provider answers).
type ModelLister interface {
	ListModels(ctx context.Context) ([]string, error)
}

// DefaultModeler is implemented by the kinds: the model of a request that
// names none (provider.X.model).
type DefaultModeler interface {
	DefaultModel() string
}

// DefaultModel is p's default model, "" when p does not say.
func DefaultModel(p Provider) string {
	if d, ok := p.(DefaultModeler); ok {
		return d.DefaultModel()
	}
	return ""
}

// Open makes the provider of one [provider.<name>] table, switching on its
// kind. base_url and headers are resolved now (an error names the key);
// api_key at use (see keyTTL), so that a rotated ${file:...} key is picked
// up.
// Open makes no request. The provider owns an HTTP client of its own:
// Close releases its idle connections.
func Open(name string, cfg config.Provider, log *zap.Logger) (Provider, error) {
	cfg.Name = name
	x, err := cfg.Expanded()
	if err != nil {
		return nil, err
	}
	b := &base{
		name: name, kind: cfg.Kind, src: &cfg, cfg: x,
		log:  log.Named("provider").With(zap.String("provider", name), zap.String("kind", cfg.Kind)),
		http: &http.Client{Transport: tracing.Transport{Base: http.DefaultTransport.(*http.Transport).Clone()}},
	}
	// Values that came from references are secrets too.
	if x.BaseURL != cfg.BaseURL {
		b.redact = append(b.redact, tooling.Redaction{Secret: x.BaseURL, Shown: "<provider." + name + ".base_url>"})
	}
	for k, v := range x.Headers {
		if v != cfg.Headers[k] && v != "" {
			b.redact = append(b.redact, tooling.Redaction{Secret: v, Shown: "<provider." + name + ".headers." + k + ">"})
		}
	}
	switch cfg.Kind {
	case config.KindOpenAI:
		return newOpenAI(b), nil
	case config.KindAnthropic:
		return newAnthropic(b), nil
	}
	return nil, fmt.Errorf("provider %s: %w %q (want %s or %s)", name, ErrUnknownKind, cfg.Kind, config.KindOpenAI, config.KindAnthropic)
}

// base is what both kinds share: the config, the log, the HTTP client and
// the secrets to keep out of error text.
type base struct {
	name, kind string
	src        *config.Provider // as configured (api_key still a reference)
	cfg        *config.Provider // base_url and headers resolved
	log        *zap.Logger
	http       *http.Client
	redact     []tooling.Redaction
	key        resolvedKey
}

func (b *base) Kind() string         { return b.kind }
func (b *base) Name() string         { return b.name }
func (b *base) DefaultModel() string { return b.cfg.Model }

// Close releases the provider's idle connections.
// done logs a request that was answered.
func (b *base) done(start time.Time, r *Response) {
	b.log.Debug("chat", zap.String("model", r.Model), zap.Duration("duration", time.Since(start)),
		zap.Uint32("input_tokens", r.Usage.InputTokens), zap.Uint32("output_tokens", r.Usage.OutputTokens))
}

func (b *base) Close() error {
	b.http.CloseIdleConnections()
	return nil
}

// keyTTL is how long a resolved api_key is used before it is resolved
// again: a rotated ${file:...} key is picked up within it, and at once
// after the endpoint refuses the credentials (401 or 403). Reading the file
// on every request cost about 0.1 ms of a stream's time to first delta
// (BenchmarkChatStreamGuest, issue 17).
var keyTTL = time.Second

// resolvedKey is api_key as last resolved.
type resolvedKey struct {
	mu  sync.Mutex
	key string
	rs  []tooling.Redaction
	at  time.Time // zero: resolve at the next request
}

// apiKey resolves api_key for one request (see keyTTL) and returns the
// redactions that keep it (and the resolved base_url and headers) out of
// error text.
func (b *base) apiKey() (string, []tooling.Redaction, error) {
	c := &b.key
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < keyTTL {
		return c.key, c.rs, nil
	}
	k, err := b.src.ExpandAPIKey()
	if err != nil {
		c.at = time.Time{}
		return "", nil, tooling.Errorf(tooling.CodeUnavailable, "%w", err)
	}
	rs := b.redact
	if k != "" {
		rs = append(slices.Clip(rs), tooling.Redaction{Secret: k, Shown: "<provider." + b.name + ".api_key>"})
	}
	c.key, c.rs, c.at = k, rs, time.Now()
	return k, rs, nil
}

// forgetKey makes the next request resolve api_key again.
func (b *base) forgetKey() {
	b.key.mu.Lock()
	b.key.at = time.Time{}
	b.key.mu.Unlock()
}

// model is the request's model, or the provider's default.
func (b *base) model(req *Request) string {
	if req.Model != "" {
		return req.Model
	}
	return b.cfg.Model
}

// maxTokens is the request's max_tokens capped by provider.X.max_tokens,
// which is also the default.
func (b *base) maxTokens(req *Request) int64 {
	limit := int64(b.cfg.MaxTokens)
	if req.MaxTokens != nil && int64(*req.MaxTokens) < limit && *req.MaxTokens > 0 {
		return int64(*req.MaxTokens)
	}
	return limit
}

// Registry is the providers of a config, by name.
type Registry struct {
	byName map[string]Provider
}

// OpenAll opens every [provider.*] of cfg. On an error the providers
// opened so far are closed.
func OpenAll(cfg *config.Config, log *zap.Logger) (*Registry, error) {
	r := &Registry{byName: make(map[string]Provider, len(cfg.Provider))}
	for _, name := range sortedNames(cfg.Provider) {
		p, err := Open(name, *cfg.Provider[name], log)
		if err != nil {
			_ = r.Close()
			return nil, err
		}
		r.byName[name] = p
	}
	return r, nil
}

// Get is the provider called name.
func (r *Registry) Get(name string) (Provider, bool) {
	p, ok := r.byName[name]
	return p, ok
}

// Names lists the providers, sorted.
func (r *Registry) Names() []string { return sortedNames(r.byName) }

// Close closes every provider.
func (r *Registry) Close() error {
	for _, p := range r.byName {
		if c, ok := p.(interface{ Close() error }); ok {
			_ = c.Close()
		}
	}
	return nil
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
