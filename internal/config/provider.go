package config

// The [provider.<name>] tables and the provider grants of an agent.

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Provider kinds (provider.X.kind).
const (
	KindOpenAI    = "openai"    // Chat Completions, any OpenAI-compatible server
	KindAnthropic = "anthropic" // the Messages API
)

// ProviderKinds are the values of provider.X.kind.
var ProviderKinds = []string{KindOpenAI, KindAnthropic}

// Defaults of a provider's keys.
const (
	DefaultProviderTimeout    = 10 * time.Minute // one attempt (a whole stream included)
	DefaultProviderMaxRetries = 2                // the SDKs' own default
	DefaultProviderMaxTokens  = 4096
	maxProviderRetries        = 10
)

// Provider is one [provider.<name>] table: a model endpoint. APIKey keeps
// its ${env:...} / ${file:...} reference (it is never written in the file
// itself); call ExpandAPIKey at use, never log its result. BaseURL and the
// Headers values may hold references too: call Expanded.
type Provider struct {
	Name string `toml:"-"`

	Kind       string            `toml:"kind"`               // openai|anthropic
	BaseURL    string            `toml:"base_url,omitempty"` // "": the API's public endpoint
	APIKey     string            `toml:"api_key,omitempty"`  // a reference; "": none sent
	Model      string            `toml:"model"`              // the default model
	Headers    map[string]string `toml:"headers,omitempty"`
	Timeout    Duration          `toml:"timeout"`     // one attempt
	MaxRetries int               `toml:"max_retries"` // the SDK's retries (429, 5xx, connection errors)
	MaxTokens  int               `toml:"max_tokens"`  // the default and the cap of a request's max_tokens
}

// ProviderGrant is one [agent.<name>.grants.<provider>] table: the limits of
// an agent on a provider it is granted. Zero means no limit.
type ProviderGrant struct {
	Models             []string `toml:"models,omitzero"` // globs; nil: every model
	MaxConcurrentCalls int      `toml:"max_concurrent_calls,omitzero"`
	RequestsPerMinute  float64  `toml:"requests_per_minute,omitzero"`
	TokensPerHour      int64    `toml:"tokens_per_hour,omitzero"` // input + output, over the last hour
	TokensPerDay       int64    `toml:"tokens_per_day,omitzero"`  // input + output, over the last 24 hours
	MaxTokens          int      `toml:"max_tokens,omitzero"`      // caps a request's max_tokens
	AuditArguments     bool     `toml:"audit_arguments,omitzero"` // the audit log may carry message text
}

// ExpandAPIKey resolves the provider's api_key reference. Its errors name
// the key and the reference, never a value.
func (p *Provider) ExpandAPIKey() (string, error) {
	k, err := Expand(p.APIKey)
	if err != nil {
		return "", fmt.Errorf("provider %s: api_key: %w", p.Name, err)
	}
	return k, nil
}

// Expanded returns a copy of p with the references in BaseURL and the
// Headers values resolved (APIKey is left as it is: see ExpandAPIKey).
func (p *Provider) Expanded() (*Provider, error) {
	c := *p
	var err error
	if c.BaseURL, err = Expand(p.BaseURL); err != nil {
		return nil, fmt.Errorf("provider %s: base_url: %w", p.Name, err)
	}
	if c.Headers, err = expandMap(p.Headers); err != nil {
		return nil, fmt.Errorf("provider %s: headers.%w", p.Name, err)
	}
	return &c, nil
}

func (d *decoder) provider(path []string, name string, v any) *Provider {
	m, ok := d.asTable(path, v)
	if !ok {
		return nil
	}
	if !validName(name) {
		d.errAt(path, "invalid provider name: use 1 to 64 letters, digits, '-' and '_'")
	}
	if d.toolings[name] {
		d.errAt(path, "%q names both a [tooling.%s] and a [provider.%s]: toolings and providers share one namespace (an agent's grants.%s must name one of them)", name, name, name, name)
	}
	p := &Provider{Name: name}
	var retriesSet bool
	d.fields(path, m, handlers{
		"kind": func(p2 []string, v any) { p.Kind, _ = d.asEnum(p2, v, ProviderKinds...) },
		"base_url": func(p2 []string, v any) {
			s, ok := d.asRefString(p2, v)
			if !ok {
				return
			}
			if s == "" {
				d.errAt(p2, "must not be empty (leave it out for the API's public endpoint)")
				return
			}
			if !HasRefs(s) {
				if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					d.errAt(p2, "invalid url: want http:// or https:// and a host")
					return
				}
			}
			p.BaseURL = s
		},
		"api_key": func(p2 []string, v any) {
			s, ok := d.asRefString(p2, v)
			if !ok {
				return
			}
			if !HasRefs(s) {
				// The message must not quote s: it may be a key.
				d.errAt(p2, "must be a reference such as \"${env:OPENAI_API_KEY}\" or \"${file:/run/secrets/key}\": a key is never written in the config")
				return
			}
			p.APIKey = s
		},
		"model": func(p2 []string, v any) {
			s, ok := d.asPlainString(p2, v)
			if ok && strings.TrimSpace(s) == "" {
				d.errAt(p2, "must not be empty")
				return
			}
			p.Model = s
		},
		"headers": func(p2 []string, v any) { p.Headers, _ = d.asStringMap(p2, v, headerKey) },
		"timeout": func(p2 []string, v any) { p.Timeout, _ = d.asDuration(p2, v, true) },
		"max_retries": func(p2 []string, v any) {
			n, ok := d.asInt(p2, v, 0)
			if ok && n > maxProviderRetries {
				d.errAt(p2, "at most %d, got %d", maxProviderRetries, n)
				return
			}
			p.MaxRetries, retriesSet = n, ok
		},
		"max_tokens": func(p2 []string, v any) { p.MaxTokens, _ = d.asInt(p2, v, 1) },
	})
	if _, ok := m["kind"]; !ok {
		d.errAt(child(path, "kind"), "missing (%s)", strings.Join(ProviderKinds, " or "))
	}
	if _, ok := m["model"]; !ok {
		d.errAt(child(path, "model"), "missing (the model a request without one gets)")
	}
	for k := range p.Headers {
		if p.APIKey != "" && (strings.EqualFold(k, "Authorization") || strings.EqualFold(k, "X-Api-Key")) {
			d.errAt(child(child(path, "headers"), k), "conflicts with api_key, which the %s SDK sends itself", p.Kind)
		}
	}
	setDefaultDuration(&p.Timeout, DefaultProviderTimeout)
	if !retriesSet {
		p.MaxRetries = DefaultProviderMaxRetries
	}
	if p.MaxTokens == 0 {
		p.MaxTokens = DefaultProviderMaxTokens
	}
	return p
}

// providerGrant decodes one [agent.<name>.grants.<provider>] table.
func (d *decoder) providerGrant(path []string, v any) *ProviderGrant {
	m, ok := d.asTable(path, v)
	if !ok {
		return nil
	}
	g := &ProviderGrant{}
	tokens := func(p []string, v any) int64 {
		n, ok := v.(int64)
		switch {
		case !ok:
			d.errAt(p, "want an integer number of tokens, got %s", typeName(v))
		case n < 1:
			d.errAt(p, "must be at least 1, got %d", n)
		default:
			return n
		}
		return 0
	}
	d.fields(path, m, handlers{
		"models": func(p []string, v any) {
			g.Models, _ = d.asStrings(p, v, func(p []string, s string) bool {
				if msg := checkPattern(s); msg != "" {
					d.errAt(p, "%s", msg)
					return false
				}
				return true
			})
			if g.Models == nil {
				g.Models = []string{} // an empty list allows no model, unlike no list
			}
		},
		"max_concurrent_calls": func(p []string, v any) { g.MaxConcurrentCalls, _ = d.asInt(p, v, 1) },
		"requests_per_minute":  func(p []string, v any) { g.RequestsPerMinute, _ = d.asRate(p, v) },
		"tokens_per_hour":      func(p []string, v any) { g.TokensPerHour = tokens(p, v) },
		"tokens_per_day":       func(p []string, v any) { g.TokensPerDay = tokens(p, v) },
		"max_tokens":           func(p []string, v any) { g.MaxTokens, _ = d.asInt(p, v, 1) },
		"audit_arguments":      func(p []string, v any) { g.AuditArguments, _ = d.asBool(p, v) },
	})
	return g
}

func (d *decoder) knownProviders() string {
	if len(d.providers) == 0 {
		return " (the file defines no providers)"
	}
	return " (defined: " + strings.Join(sortedKeys(d.providers), ", ") + ")"
}
