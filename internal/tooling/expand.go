package tooling

import (
	"fmt"
	"os"
	"strings"
)

// expand resolves the `${env:NAME}` and `${file:/path}` references in a
// config value at the moment it is used. It is an indirection so that the
// package can switch to config.Expand without touching its callers.
// Expanded values are secrets: never log them.
var expand = expandRefs

// expandRefs is the package's own expansion of `${env:NAME}` and
// `${file:/path}`. A file's content loses one trailing newline.
func expandRefs(s string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			b.WriteString(rest)
			return b.String(), nil
		}
		b.WriteString(rest[:i])
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unterminated reference %q", rest[i:])
		}
		ref := rest[i+2 : i+j]
		rest = rest[i+j+1:]
		kind, arg, ok := strings.Cut(ref, ":")
		if !ok || arg == "" {
			return "", fmt.Errorf("bad reference ${%s}: want ${env:NAME} or ${file:/path}", ref)
		}
		switch kind {
		case "env":
			v, ok := os.LookupEnv(arg)
			if !ok {
				return "", fmt.Errorf("environment variable %s is not set", arg)
			}
			b.WriteString(v)
		case "file":
			data, err := os.ReadFile(arg)
			if err != nil {
				return "", fmt.Errorf("reading secret file: %w", err)
			}
			b.WriteString(strings.TrimSuffix(string(data), "\n"))
		default:
			return "", fmt.Errorf("bad reference ${%s}: unknown kind %q", ref, kind)
		}
	}
}
