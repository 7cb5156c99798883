package config

import (
	"fmt"
	"strings"
)

// MaxNesting bounds how deep a config may nest: the parts of one key
// (`a.b.c = 1` or `[a.b.c]`: 3) and, separately, the arrays and inline
// tables open at one point of a value. toolhostd's own schema needs 4; the
// bound keeps a hostile file from costing memory quadratic in its depth.
const MaxNesting = 16

// MaxSize bounds a config's bytes. Parsing and validating cost time and
// memory in proportion to the file (about 5 µs and 4 KB per agent, see
// BenchmarkParseAgents), so this is the bound on that cost: 10,000 agents
// take about 1.5 MB of TOML, 100,000 about 15 MB.
const MaxSize = 64 << 20

// checkNesting scans data once, before any TOML parsing, and reports the
// first key with more than MaxNesting parts or the first array or inline
// table opened more than MaxNesting deep. It understands only enough TOML
// for that (strings, comments, keys, brackets): on anything else it stops
// and leaves the verdict to the parser, which then fails before it can
// nest deeper.
func checkNesting(name string, data []byte) *Error {
	s := &nestScan{data: data, line: 1, lineStart: 0}
	return s.run(name)
}

type nestScan struct {
	data      []byte
	i         int
	line      int
	lineStart int
	stmt      string // the key of the statement being scanned, for the error
	table     string // the last table header
}

func (s *nestScan) errAt(name string, off int, key, msg string) *Error {
	if len(key) > 80 {
		key = key[:80] + "…"
	}
	return &Error{File: name, Line: s.line, Col: off - s.lineStart + 1, Key: key, Msg: msg}
}

func (s *nestScan) run(name string) *Error {
	for s.i < len(s.data) {
		s.skipBlank()
		if s.i >= len(s.data) {
			return nil
		}
		switch c := s.data[s.i]; c {
		case '\n':
			s.newline()
		case '#':
			s.skipComment()
		case '[':
			start := s.i
			s.i++
			if s.i < len(s.data) && s.data[s.i] == '[' {
				s.i++
			}
			key, parts, ok := s.key(']')
			if !ok {
				return nil
			}
			s.table = key
			if parts > MaxNesting {
				return s.errAt(name, start, key, fmt.Sprintf("table name has %d parts; at most %d are allowed", parts, MaxNesting))
			}
			s.i++ // ']'
			s.skipRest()
		default:
			start := s.i
			key, parts, ok := s.key('=')
			if !ok {
				return nil
			}
			s.stmt = joinKey(s.table, key)
			if parts > MaxNesting {
				return s.errAt(name, start, s.stmt, fmt.Sprintf("key has %d parts; at most %d are allowed", parts, MaxNesting))
			}
			s.i++ // '='
			if err := s.value(name); err != nil || s.i < 0 {
				return err
			}
		}
	}
	return nil
}

func joinKey(table, key string) string {
	if table == "" {
		return key
	}
	return table + "." + key
}

func (s *nestScan) newline() {
	s.i++
	s.line++
	s.lineStart = s.i
}

func (s *nestScan) skipBlank() {
	for s.i < len(s.data) && (s.data[s.i] == ' ' || s.data[s.i] == '\t' || s.data[s.i] == '\r') {
		s.i++
	}
}

func (s *nestScan) skipComment() {
	for s.i < len(s.data) && s.data[s.i] != '\n' {
		s.i++
	}
}

// skipRest skips to the end of the line (a header's trailing comment).
func (s *nestScan) skipRest() { s.skipComment() }

// key scans a (dotted) key up to stop, which it leaves at s.i, and returns
// its text (whitespace dropped) and number of parts; !ok on a newline or
// the end of the data first.
func (s *nestScan) key(stop byte) (string, int, bool) {
	var b strings.Builder
	parts := 1
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == stop:
			return b.String(), parts, true
		case c == '\n':
			return "", 0, false
		case c == '"' || c == '\'':
			start, line := s.i, s.line
			if !s.skipString() || s.line != line {
				return "", 0, false
			}
			if b.Len() < 100 {
				b.Write(s.data[start:s.i])
			}
			continue
		case c == '.':
			parts++
		case c == ' ' || c == '\t':
			s.i++
			continue
		}
		if b.Len() < 100 {
			b.WriteByte(c)
		}
		s.i++
	}
	return "", 0, false
}

// value scans a value up to the end of its statement, tracking the arrays
// and inline tables open; it sets s.i < 0 to stop the whole scan on
// something it does not understand.
func (s *nestScan) value(name string) *Error {
	var open []byte // '[' or '{'
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch c {
		case '"', '\'':
			if !s.skipString() {
				s.i = -1
				return nil
			}
			continue
		case '#':
			s.skipComment()
			continue
		case '\n':
			if len(open) == 0 {
				return nil
			}
			s.newline()
			continue
		case '[', '{':
			open = append(open, c)
			if len(open) > MaxNesting {
				return s.errAt(name, s.i, s.stmt, fmt.Sprintf("arrays and inline tables nested more than %d deep", MaxNesting))
			}
			s.i++
			if c == '{' {
				if err, ok := s.inlineKey(name); !ok {
					return err
				}
			}
			continue
		case ']', '}':
			if len(open) == 0 {
				s.i = -1
				return nil
			}
			open = open[:len(open)-1]
		case ',':
			if len(open) > 0 && open[len(open)-1] == '{' {
				s.i++
				if err, ok := s.inlineKey(name); !ok {
					return err
				}
				continue
			}
		}
		s.i++
	}
	return nil
}

// inlineKey scans the key of an inline table's next entry, if there is one
// before its '}'; !ok stops the value scan (with the error, if any).
func (s *nestScan) inlineKey(name string) (*Error, bool) {
	// go-toml accepts newlines and comments inside inline tables.
	for {
		s.skipBlank()
		if s.i < len(s.data) && s.data[s.i] == '#' {
			s.skipComment()
		}
		if s.i >= len(s.data) || s.data[s.i] != '\n' {
			break
		}
		s.newline()
	}
	if s.i >= len(s.data) || s.data[s.i] == '}' {
		return nil, true
	}
	start := s.i
	key, parts, ok := s.key('=')
	if !ok {
		s.i = -1
		return nil, false
	}
	if parts > MaxNesting {
		return s.errAt(name, start, joinKey(s.stmt, key), fmt.Sprintf("key has %d parts; at most %d are allowed", parts, MaxNesting)), false
	}
	s.i++ // '='
	return nil, true
}

// skipString skips a basic, literal or multi-line string starting at s.i;
// false if it does not end.
func (s *nestScan) skipString() bool {
	q := s.data[s.i]
	triple := s.i+2 < len(s.data) && s.data[s.i+1] == q && s.data[s.i+2] == q
	if triple {
		s.i += 3
	} else {
		s.i++
	}
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == '\\' && q == '"':
			s.i++ // the escaped character; a newline is counted below
			if s.i < len(s.data) && s.data[s.i] != '\n' {
				s.i++
			}
			continue
		case c == '\n':
			if !triple {
				return false
			}
			s.newline()
			continue
		case c == q:
			if !triple {
				s.i++
				return true
			}
			if s.i+2 < len(s.data) && s.data[s.i+1] == q && s.data[s.i+2] == q {
				s.i += 3
				// up to two more quotes belong to the string ("""a"""").
				for n := 0; n < 2 && s.i < len(s.data) && s.data[s.i] == q; n++ {
					s.i++
				}
				return true
			}
		}
		s.i++
	}
	return false
}
