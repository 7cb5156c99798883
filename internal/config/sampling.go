package config

// A tooling's sampling table: MCP sampling answered by a provider.

import "path"

// Sampling is [tooling.X] sampling = { provider, model, models, max_tokens,
// requests_per_minute }: the server's sampling/createMessage requests are
// answered by Provider's model.
type Sampling struct {
	Provider string `toml:"provider"`
	// Model is the model asked when the request's model hints match none
	// of Models ("": the provider's model).
	Model string `toml:"model,omitempty"`
	// Models are globs of the models a request's hints may pick (nil: the
	// hints are not followed).
	Models []string `toml:"models,omitempty"`
	// MaxTokens caps a request's maxTokens (0: the provider's max_tokens).
	MaxTokens int `toml:"max_tokens,omitzero"`
	// RequestsPerMinute bounds the server's requests (0: no bound); past
	// it a request is refused at once.
	RequestsPerMinute float64 `toml:"requests_per_minute,omitzero"`
}

func (d *decoder) sampling(p []string, v any) *Sampling {
	m, ok := d.asTable(p, v)
	if !ok {
		return nil
	}
	s := &Sampling{}
	d.fields(p, m, handlers{
		"provider": func(p []string, v any) {
			name, ok := d.asPlainString(p, v)
			switch {
			case !ok:
			case !d.providers[name]:
				d.errAt(p, "no provider named %q%s", name, d.knownProviders())
			default:
				s.Provider = name
			}
		},
		"model": func(p []string, v any) { s.Model, _ = d.asPlainString(p, v) },
		"models": func(p []string, v any) {
			s.Models, _ = d.asStrings(p, v, func(p []string, g string) bool {
				if _, err := path.Match(g, ""); err != nil || g == "" {
					d.errAt(p, "%q is not a glob", g)
					return false
				}
				return true
			})
		},
		"max_tokens":          func(p []string, v any) { s.MaxTokens, _ = d.asInt(p, v, 1) },
		"requests_per_minute": func(p []string, v any) { s.RequestsPerMinute, _ = d.asRate(p, v) },
	})
	if _, set := m["provider"]; !set {
		d.errAt(p, "needs provider: the [provider.<name>] that answers the server's sampling requests")
	}
	return s
}
