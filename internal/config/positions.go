package config

import (
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// pos is a 1-based line and byte column.
type pos struct{ line, col int }

// index maps every key path of a document to where it is written: the key
// itself for a key-value (each part of a dotted key), the '[' of a table
// header, the value for an array element. The first occurrence wins.
type index struct {
	data      []byte
	lineStart []int
	at        map[string]pos
	// elems holds, per array path, the offset of each element: arrays
	// can be long, and a path key per element would cost more than the
	// element.
	elems map[string][]int32
}

// pathKey is the index key of a path: parts joined with NUL (key parts may
// contain dots when quoted).
func pathKey(path []string) string { return strings.Join(path, "\x00") }

// elem is the path part for array element i.
func elem(i int) string { return "\x01" + strconv.Itoa(i) }

// elemIndex is the index of an elem path part; !ok for a key.
func elemIndex(part string) (int, bool) {
	if !strings.HasPrefix(part, "\x01") {
		return 0, false
	}
	i, err := strconv.Atoi(part[1:])
	return i, err == nil
}

// displayPath formats a path for humans: tooling.fs.command,
// agent.w.toolings[1], tooling."a.b".url.
func displayPath(path []string) string {
	var b strings.Builder
	for _, p := range path {
		if strings.HasPrefix(p, "\x01") {
			b.WriteString("[" + p[1:] + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		if isBareKey(p) {
			b.WriteString(p)
		} else {
			b.WriteString(strconv.Quote(p))
		}
	}
	return b.String()
}

func isBareKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// newIndex is an empty index of data; its indexer records the positions of
// the expressions buildDocument's parser reads.
func newIndex(data []byte) *index {
	return &index{data: data, lineStart: lineStarts(data), at: map[string]pos{}, elems: map[string][]int32{}}
}

// indexer records the key paths of a document's expressions, in order.
type indexer struct {
	ix          *index
	prefix      []string       // the table the key-values go under
	arrayTables map[string]int // elements so far of each array of tables
}

func (x *indexer) expression(e *unstable.Node) {
	ix := x.ix
	switch e.Kind {
	case unstable.Table, unstable.ArrayTable:
		parts, nodes := keyOf(e.Key())
		hp := ix.headerPos(nodes[0])
		ix.record(parts, hp)
		for i := range parts {
			ix.record(parts[:i+1], ix.nodePos(nodes[i]))
		}
		x.prefix = parts
		if e.Kind == unstable.ArrayTable {
			if x.arrayTables == nil {
				x.arrayTables = map[string]int{}
			}
			k := pathKey(parts)
			n := x.arrayTables[k]
			x.arrayTables[k] = n + 1
			x.prefix = append(append([]string(nil), parts...), elem(n))
			ix.record(x.prefix, hp)
		}
	case unstable.KeyValue:
		ix.keyValue(x.prefix, e)
	}
}

// lineStarts is the offset of every line's first byte.
func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

func keyOf(it unstable.Iterator) ([]string, []*unstable.Node) {
	var parts []string
	var nodes []*unstable.Node
	for it.Next() {
		n := it.Node()
		parts = append(parts, string(n.Data))
		nodes = append(nodes, n)
	}
	return parts, nodes
}

func (ix *index) keyValue(prefix []string, kv *unstable.Node) {
	parts, nodes := keyOf(kv.Key())
	path := append(append([]string(nil), prefix...), parts...)
	for i := range parts {
		ix.record(path[:len(prefix)+i+1], ix.nodePos(nodes[i]))
	}
	ix.value(path, kv.Value(), ix.nodePos(nodes[len(nodes)-1]))
}

// value indexes the insides of arrays and inline tables; fallback is the
// position to use for elements whose node carries no range.
func (ix *index) value(path []string, v *unstable.Node, fallback pos) {
	switch v.Kind {
	case unstable.Array:
		k := pathKey(path)
		offs := ix.elems[k]
		for it := v.Children(); it.Next(); {
			n := it.Node()
			if n.Kind == unstable.Comment {
				continue
			}
			p := fallback
			if n.Raw.Length > 0 {
				p = ix.nodePos(n)
			}
			offs = append(offs, int32(ix.lineStart[p.line-1]+p.col-1))
			if n.Kind == unstable.Array || n.Kind == unstable.InlineTable {
				ix.value(append(path[:len(path):len(path)], elem(len(offs)-1)), n, p)
			}
		}
		if _, seen := ix.elems[k]; !seen {
			ix.elems[k] = offs
		}
	case unstable.InlineTable:
		for it := v.Children(); it.Next(); {
			if n := it.Node(); n.Kind == unstable.KeyValue {
				ix.keyValue(path, n)
			}
		}
	}
}

func (ix *index) record(path []string, p pos) {
	k := pathKey(path)
	if _, ok := ix.at[k]; !ok {
		ix.at[k] = p
	}
}

func (ix *index) nodePos(n *unstable.Node) pos { return ix.offsetPos(int(n.Raw.Offset)) }

// headerPos is the position of the '[' (or '[[') before a header's first key.
func (ix *index) headerPos(first *unstable.Node) pos {
	off := int(first.Raw.Offset)
	for off > 0 && (ix.data[off-1] == ' ' || ix.data[off-1] == '\t') {
		off--
	}
	for n := 0; n < 2 && off > 0 && ix.data[off-1] == '['; n++ {
		off--
	}
	return ix.offsetPos(off)
}

func (ix *index) offsetPos(off int) pos {
	line := sort.Search(len(ix.lineStart), func(i int) bool { return ix.lineStart[i] > off }) - 1
	return pos{line: line + 1, col: off - ix.lineStart[line] + 1}
}

// lookup returns the position of path, or of its nearest indexed ancestor,
// or 1:1 for the document.
func (ix *index) lookup(path []string) pos {
	for n := len(path); n > 0; n-- {
		if i, ok := elemIndex(path[n-1]); ok {
			if offs := ix.elems[pathKey(path[:n-1])]; i < len(offs) {
				return ix.offsetPos(int(offs[i]))
			}
		}
		if p, ok := ix.at[pathKey(path[:n])]; ok {
			return p
		}
	}
	return pos{1, 1}
}
