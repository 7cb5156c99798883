package policy

import (
	"strings"
	"unicode/utf8"
)

// Pattern is one compiled glob of a grant: `*` matches any run of
// characters other than '/', `**` any run including '/', `?` one character
// other than '/'; every other character matches itself. So in a uri
// "file:///srv/data/*" matches the files directly in /srv/data and
// "file:///srv/data/**" everything below it; a tool name has no '/', so
// there `*` and `**` are the same.
type Pattern struct {
	src string
	// literal: no wildcard at all (the common case: a plain name).
	literal bool
	// prefix: the pattern is lit followed by one trailing `*` or `**`.
	prefix    bool
	prefixAll bool // the trailing wildcard is `**`
	lit       string
}

// Compile compiles a glob; every string is a valid pattern.
func Compile(s string) Pattern {
	p := Pattern{src: s}
	i := strings.IndexAny(s, "*?")
	switch {
	case i < 0:
		p.literal, p.lit = true, s
	case strings.HasSuffix(s, "**") && i == len(s)-2:
		p.prefix, p.prefixAll, p.lit = true, true, s[:i]
	case strings.HasSuffix(s, "*") && i == len(s)-1:
		p.prefix, p.lit = true, s[:i]
	}
	return p
}

// String is the pattern as written.
func (p Pattern) String() string { return p.src }

// Match reports whether s matches the whole pattern.
func (p Pattern) Match(s string) bool {
	switch {
	case p.literal:
		return s == p.lit
	case p.prefix:
		if !strings.HasPrefix(s, p.lit) {
			return false
		}
		return p.prefixAll || !strings.Contains(s[len(p.lit):], "/")
	}
	return match(p.src, s)
}

// match is the general matcher: backtracking over the wildcards, linear in
// practice for the short patterns of a config.
func match(pat, s string) bool {
	for len(pat) > 0 {
		switch pat[0] {
		case '?':
			if len(s) == 0 || s[0] == '/' {
				return false
			}
			_, n := utf8.DecodeRuneInString(s)
			pat, s = pat[1:], s[n:]
		case '*':
			all := strings.HasPrefix(pat, "**")
			rest := strings.TrimLeft(pat, "*")
			if rest == "" {
				return all || !strings.Contains(s, "/")
			}
			for i := 0; i <= len(s); i++ {
				if match(rest, s[i:]) {
					return true
				}
				if i < len(s) && s[i] == '/' && !all {
					return false
				}
			}
			return false
		default:
			if len(s) == 0 || s[0] != pat[0] {
				return false
			}
			pat, s = pat[1:], s[1:]
		}
	}
	return len(s) == 0
}

// anyMatch reports whether s matches one of ps.
func anyMatch(ps []Pattern, s string) bool {
	for i := range ps {
		if ps[i].Match(s) {
			return true
		}
	}
	return false
}

// firstMatch is the first of ps that s matches ("" for none).
func firstMatch(ps []Pattern, s string) string {
	for i := range ps {
		if ps[i].Match(s) {
			return ps[i].src
		}
	}
	return ""
}
