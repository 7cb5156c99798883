package main

import (
	"fmt"
	"strings"

	"github.com/toolhostd/toolhostd/internal/policy"
)

// splitGrant splits a --grant value, TOOLING or TOOLING=PATTERN,PATTERN...,
// into the tooling and its tool patterns (nil: every tool); a --provider
// value, PROVIDER or PROVIDER=MODEL,..., into the provider and its model
// globs.
func splitGrant(v string) (string, []string, error) {
	name, list, narrowed := strings.Cut(v, "=")
	if !narrowed {
		return name, nil, nil
	}
	tools := []string{}
	for p := range strings.SplitSeq(list, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return "", nil, fmt.Errorf("%q: an empty pattern after = (want NAME or NAME=PATTERN[,PATTERN...])", v)
		}
		tools = append(tools, p)
	}
	return name, tools, nil
}

// grantPolicy is the policy of `run`'s --grant values (chat's --tools,
// flag names which in errors): TOOLING=PATTERNS narrows the tools of
// TOOLING to those patterns.
func grantPolicy(agent, flag string, grants []string) (*policy.Agent, error) {
	rules := map[string]policy.Rules{}
	for _, v := range grants {
		name, tools, err := splitGrant(v)
		if err != nil {
			return nil, fmt.Errorf("%s %w", flag, err)
		}
		if tools != nil {
			r := rules[name]
			r.Tools = append(r.Tools, tools...)
			rules[name] = r
		}
	}
	return policy.New(agent, rules, policy.Options{}), nil
}

// grantNames are the toolings named by --grant values (patterns cut off).
func grantNames(grants []string) []string {
	out := make([]string, len(grants))
	for i, v := range grants {
		out[i], _, _ = strings.Cut(v, "=")
	}
	return out
}
