package config

// The typed readers of TOML values: each checks one value and reports its
// error at the value's path.

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
)

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	default:
		return "a date/time"
	}
}

func (d *decoder) asTable(path []string, v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		d.errAt(path, "want a table, got %s", typeName(v))
	}
	return m, ok
}

func (d *decoder) asString(path []string, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		d.errAt(path, "want a string, got %s", typeName(v))
	}
	return s, ok
}

func (d *decoder) asInt(path []string, v any, min int64) (int, bool) {
	n, ok := v.(int64)
	if !ok {
		d.errAt(path, "want an integer, got %s", typeName(v))
		return 0, false
	}
	if n < min {
		d.errAt(path, "must be at least %d, got %d", min, n)
		return 0, false
	}
	if n > math.MaxInt32 {
		d.errAt(path, "%d is too large", n)
		return 0, false
	}
	return int(n), true
}

// asRefString is a string whose ${...} references are expanded at use.
// asNumber is an integer or a float, as a float64; its error says it
// wants want ("a number", "a number from 0 to 1").
func (d *decoder) asNumber(p []string, v any, want string) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	d.errAt(p, "want %s, got %s", want, typeName(v))
	return 0, false
}

// asRate is a rate (per second or per minute): a finite number above 0
// and at most 1000000.
func (d *decoder) asRate(p []string, v any) (float64, bool) {
	x, ok := d.asNumber(p, v, "a number")
	if !ok {
		return 0, false
	}
	if !(x > 0) || x > 1e6 || math.IsInf(x, 0) {
		d.errAt(p, "must be a rate above 0 and at most 1000000, got %v", v)
		return 0, false
	}
	return x, true
}

// asBool is a boolean.
func (d *decoder) asBool(path []string, v any) (bool, bool) {
	b, ok := v.(bool)
	if !ok {
		d.errAt(path, "want a boolean, got %s", typeName(v))
	}
	return b, ok
}

// asNames is a list of names, each declared (known) and listed once; what
// says what they name ("tooling", "provider") and defined lists those
// declared, for the error.
func (d *decoder) asNames(path []string, v any, known map[string]bool, what string, defined func() string) []string {
	seen := map[string]bool{}
	out, _ := d.asStrings(path, v, func(p []string, s string) bool {
		switch {
		case !known[s]:
			d.errAt(p, "no %s named %q%s", what, s, defined())
			return false
		case seen[s]:
			d.errAt(p, "%q is granted twice", s)
			return false
		}
		seen[s] = true
		return true
	})
	return out
}

func (d *decoder) asRefString(path []string, v any) (string, bool) {
	s, ok := d.asString(path, v)
	if ok {
		if err := checkRefs(s); err != nil {
			d.errAt(path, "%v", err)
			return "", false
		}
	}
	return s, ok
}

// asPlainString is a string in which ${...} references are not expanded.
func (d *decoder) asPlainString(path []string, v any) (string, bool) {
	s, ok := d.asString(path, v)
	if ok && HasRefs(s) {
		d.errAt(path, "${...} references are not expanded here (only in command, args, env, url and headers); write $${ for a literal ${")
		return "", false
	}
	return s, ok
}

func (d *decoder) asStrings(path []string, v any, each func(path []string, s string) bool) ([]string, bool) {
	arr, ok := v.([]any)
	if !ok {
		d.errAt(path, "want an array of strings, got %s", typeName(v))
		return nil, false
	}
	out := make([]string, 0, len(arr))
	good := true
	for i, e := range arr {
		p := child(path, elem(i))
		s, ok := d.asString(p, e)
		if ok && each != nil {
			ok = each(p, s)
		}
		good = good && ok
		out = append(out, s)
	}
	return out, good
}

// asStringMap decodes a table of strings; key checks the key, value
// decoding uses asRefString.
func (d *decoder) asStringMap(path []string, v any, key func(string) string) (map[string]string, bool) {
	m, ok := d.asTable(path, v)
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(m))
	good := true
	for _, k := range sortedKeys(m) {
		p := child(path, k)
		if msg := key(k); msg != "" {
			d.errAt(p, "%s", msg)
			good = false
		}
		s, ok := d.asRefString(p, m[k])
		good = good && ok
		out[k] = s
	}
	return out, good
}

// asDuration decodes a duration string; positive demands > 0.
func (d *decoder) asDuration(path []string, v any, positive bool) (Duration, bool) {
	s, ok := v.(string)
	if !ok {
		d.errAt(path, "want a duration string such as \"10s\", got %s", typeName(v))
		return Duration{}, false
	}
	x, err := parseDuration(s)
	if err != nil {
		d.errAt(path, "%v", err)
		return Duration{}, false
	}
	if positive && x == 0 {
		d.errAt(path, "must be positive")
		return Duration{}, false
	}
	return Duration{x}, true
}

func (d *decoder) asEnum(path []string, v any, allowed ...string) (string, bool) {
	s, ok := d.asString(path, v)
	if ok && !slices.Contains(allowed, s) {
		d.errAt(path, "%q is not one of %s", s, strings.Join(allowed, ", "))
		return "", false
	}
	return s, ok
}

// resolvePath makes a relative path relative to the config's directory.
func (d *decoder) resolvePath(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(d.dir, p)
}

// validName reports whether s is a tooling or agent name: letters, digits,
// '-' and '_'.
func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func envKey(k string) string {
	if k == "" || strings.ContainsAny(k, "=\x00") {
		return "invalid environment variable name (empty, or contains '=' or NUL)"
	}
	return ""
}

func headerKey(k string) string {
	if k == "" {
		return "empty header name"
	}
	for _, c := range k {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", c) {
			return "invalid HTTP header name"
		}
	}
	return ""
}
