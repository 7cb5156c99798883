package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Expand resolves the secret references in s: ${env:NAME} becomes the value
// of the environment variable NAME (an error if it is unset), ${file:/path}
// the content of the file (one trailing newline trimmed), and $${ a literal
// "${". Any other '$' is kept as is. Errors name the reference but never
// print a value, so they are safe to log.
func Expand(s string) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	err := scanRefs(s, func(lit string) { b.WriteString(lit) }, func(scheme, arg string) error {
		v, err := resolveRef(scheme, arg)
		if err != nil {
			return err
		}
		b.WriteString(v)
		return nil
	})
	if err != nil {
		return "", err
	}
	return b.String(), nil
}

// HasRefs reports whether s holds a ${...} reference (so its final value is
// only known at use).
func HasRefs(s string) bool {
	found := false
	_ = scanRefs(s, func(string) {}, func(string, string) error { found = true; return nil })
	return found
}

// checkRefs validates the syntax of every reference in s without resolving
// any of them.
func checkRefs(s string) error {
	return scanRefs(s, func(string) {}, func(string, string) error { return nil })
}

// scanRefs splits s into literal text and references and checks each
// reference's syntax. Messages never quote the text around a reference.
func scanRefs(s string, lit func(string), ref func(scheme, arg string) error) error {
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 {
			lit(s)
			return nil
		}
		lit(s[:i])
		rest := s[i:]
		switch {
		case strings.HasPrefix(rest, "$${"):
			lit("${")
			s = rest[3:]
		case strings.HasPrefix(rest, "${"):
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return fmt.Errorf("%w: unterminated \"${\" (write \"$${\" for a literal \"${\")", ErrBadReference)
			}
			body := rest[2:end]
			scheme, arg, ok := strings.Cut(body, ":")
			if !ok {
				return fmt.Errorf("%w: reference without a scheme (want ${env:NAME} or ${file:/path})", ErrBadReference)
			}
			switch scheme {
			case "env":
				if !validEnvName(arg) {
					return fmt.Errorf("%w: ${env:...}: invalid variable name (want letters, digits and _, not starting with a digit)", ErrBadReference)
				}
			case "file":
				if !filepath.IsAbs(arg) {
					return fmt.Errorf("%w: ${file:...}: the path must be absolute", ErrBadReference)
				}
			default:
				return fmt.Errorf("%w: unknown reference scheme (want ${env:NAME} or ${file:/path})", ErrBadReference)
			}
			if err := ref(scheme, arg); err != nil {
				return err
			}
			s = rest[end+1:]
		default:
			lit("$")
			s = rest[1:]
		}
	}
}

func resolveRef(scheme, arg string) (string, error) {
	switch scheme {
	case "env":
		v, ok := os.LookupEnv(arg)
		if !ok {
			return "", fmt.Errorf("${env:%s}: %w", arg, ErrUnsetVariable)
		}
		return v, nil
	default: // "file", checked by scanRefs
		b, err := os.ReadFile(arg)
		if err != nil {
			var reason error = err
			if pe, ok := err.(*os.PathError); ok {
				reason = pe.Err
			}
			return "", fmt.Errorf("${file:%s}: %w", arg, reason)
		}
		v := strings.TrimSuffix(string(b), "\n")
		return strings.TrimSuffix(v, "\r"), nil
	}
}

func validEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Expanded returns a copy of t with the references in Command, Args, Env
// values, URL and Headers values resolved. Call it when starting or connecting the
// tooling; never log its result.
func (t *Tooling) Expanded() (*Tooling, error) {
	c := *t
	var err error
	if c.Command, err = Expand(t.Command); err != nil {
		return nil, fmt.Errorf("tooling %s: command: %w", t.Name, err)
	}
	if c.URL, err = Expand(t.URL); err != nil {
		return nil, fmt.Errorf("tooling %s: url: %w", t.Name, err)
	}
	if t.Args != nil {
		c.Args = make([]string, len(t.Args))
		for i, a := range t.Args {
			if c.Args[i], err = Expand(a); err != nil {
				return nil, fmt.Errorf("tooling %s: args[%d]: %w", t.Name, i, err)
			}
		}
	}
	if c.Env, err = expandMap(t.Env); err != nil {
		return nil, fmt.Errorf("tooling %s: env.%w", t.Name, err)
	}
	if c.Headers, err = expandMap(t.Headers); err != nil {
		return nil, fmt.Errorf("tooling %s: headers.%w", t.Name, err)
	}
	return &c, nil
}

// ExpandedEnv returns the agent's env with its references resolved.
func (a *Agent) ExpandedEnv() (map[string]string, error) {
	m, err := expandMap(a.Env)
	if err != nil {
		return nil, fmt.Errorf("agent %s: env.%w", a.Name, err)
	}
	return m, nil
}

// expandMap's errors start with the key, for the caller to prefix.
func expandMap(m map[string]string) (map[string]string, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		x, err := Expand(m[k])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = x
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
