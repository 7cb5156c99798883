package config

// The generic document: the TOML file as nested maps, before the schema.
//
// toml.Unmarshal into a map finds duplicate keys and redefined tables with
// a tracker that searches every entry seen so far for each new key
// (go-toml v2.4.3, internal/tracker's SeenTracker.find), so its cost grows
// with the square of the file: 10,000 agents took 0.7 s, 40,000 took 6.6 s,
// 110,000 keys in one table 40 s. The builder here walks the AST of the
// same parser (go-toml's unstable.Parser) and keeps every table's keys in a
// map, so its cost grows with the file. Strings and booleans are taken as
// the parser decoded them; every other scalar is decoded by toml.Unmarshal
// of that one value, so numbers and dates mean exactly what they mean to
// go-toml. FuzzDocument checks that it accepts, refuses and builds what
// toml.Unmarshal does.

import (
	"errors"
	"fmt"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// tableKind is how a table came to exist, which decides what may extend it
// (TOML 1.0, "Table" and "Array of Tables").
type tableKind uint8

const (
	implicitTable tableKind = iota // a parent named by a header: [a.b] makes a
	headerTable                    // opened by its own [header] or [[header]]
	dottedTable                    // made by a dotted key: a.b = 1 makes a
)

// docTable is one table while the document is built.
type docTable struct {
	kind   tableKind
	keys   map[string]any       // the values, as the finished map holds them
	tables map[string]*docTable // the sub-tables (keys[k] is their map)
	arrays map[string]*docArray // the arrays of tables
}

// docArray is an array of tables: [[name]].
type docArray struct {
	elems []*docTable
}

func newDocTable(kind tableKind) *docTable {
	return &docTable{kind: kind, keys: map[string]any{}}
}

// docError is a semantic error of the document at a byte offset.
type docError struct {
	off  int
	path []string
	msg  string
}

func (e *docError) Error() string { return e.msg }

// buildDocument parses data into the map toml.Unmarshal would make, and
// records in ix where each key path is written (one parse for both). Its
// error is a *docError: a syntax error, a duplicate or redefinition, or a
// number or date go-toml refuses.
func buildDocument(data []byte, ix *index) (map[string]any, error) {
	b := &docBuilder{root: newDocTable(headerTable)}
	b.p.Reset(data)
	x := &indexer{ix: ix}
	cur, curPath := b.root, []string(nil)
	for b.p.NextExpression() {
		e := b.p.Expression()
		x.expression(e)
		var err error
		switch e.Kind {
		case unstable.Table:
			cur, curPath, err = b.header(e, false)
		case unstable.ArrayTable:
			cur, curPath, err = b.header(e, true)
		case unstable.KeyValue:
			err = b.keyValue(cur, curPath, e, dottedTable)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := b.p.Error(); err != nil {
		var pe *unstable.ParserError
		if errors.As(err, &pe) {
			// The highlight is a slice of data: its offset is what its
			// capacity lacks.
			off := max(0, min(len(data), cap(data)-cap(pe.Highlight)))
			if pe.Highlight == nil {
				off = len(data)
			}
			return nil, &docError{off: off, path: pe.Key, msg: pe.Message}
		}
		return nil, err
	}
	if err := b.decodeScalars(); err != nil {
		return nil, err
	}
	return fill(b.finish(b.root)).(map[string]any), nil
}

type docBuilder struct {
	p       unstable.Parser
	root    *docTable
	keyOff  int           // the last key part seen: the position of nodes without one
	scalars []*scalarSlot // numbers and dates, in document order
}

func (b *docBuilder) off(n *unstable.Node) int {
	if n.Raw.Length == 0 {
		return b.keyOff
	}
	return int(n.Raw.Offset)
}

// header opens [a.b.c] or [[a.b.c]] and returns the table keys go under.
func (b *docBuilder) header(e *unstable.Node, array bool) (*docTable, []string, error) {
	t := b.root
	var path []string
	for it := e.Key(); it.Next(); {
		n := it.Node()
		k := string(n.Data)
		b.keyOff = b.off(n)
		path = append(path, k)
		last := it.IsLast()
		if a, ok := t.arrays[k]; ok {
			if !last {
				t = a.elems[len(a.elems)-1]
				path = append(path, elem(len(a.elems)-1))
				continue
			}
			if !array {
				return nil, nil, b.errorf(n, path, "table %s already exists as an array of tables", k)
			}
			el := newDocTable(headerTable)
			a.elems = append(a.elems, el)
			return el, append(path, elem(len(a.elems)-1)), nil
		}
		if sub, ok := t.tables[k]; ok {
			if !last {
				t = sub
				continue
			}
			switch {
			case array:
				return nil, nil, b.errorf(n, path, "key %s is already defined as a table", k)
			case sub.kind == implicitTable:
				sub.kind = headerTable
				return sub, path, nil
			case sub.kind == dottedTable:
				return nil, nil, b.errorf(n, path, "table %s was already defined by dotted keys", k)
			default:
				return nil, nil, b.errorf(n, path, "table %s already exists", k)
			}
		}
		if _, ok := t.keys[k]; ok {
			return nil, nil, b.errorf(n, path, "key %s is already defined as a value", k)
		}
		switch {
		case !last:
			t = t.addTable(k, implicitTable)
		case array:
			el := newDocTable(headerTable)
			if t.arrays == nil {
				t.arrays = map[string]*docArray{}
			}
			t.arrays[k] = &docArray{elems: []*docTable{el}}
			t.keys[k] = nil // finish puts the array here
			return el, append(path, elem(0)), nil
		default:
			return t.addTable(k, headerTable), path, nil
		}
	}
	return t, path, nil
}

func (t *docTable) addTable(k string, kind tableKind) *docTable {
	sub := newDocTable(kind)
	if t.tables == nil {
		t.tables = map[string]*docTable{}
	}
	t.tables[k] = sub
	t.keys[k] = nil // finish puts the table's map here
	return sub
}

// keyValue sets a.b.c = v in t: a and b become (or must already be) tables
// made by dotted keys in the same table; c must be new. kind is the kind of
// the tables a dotted key makes (dottedTable; headerTable inside an inline
// table, which nothing outside it can extend anyway).
func (b *docBuilder) keyValue(t *docTable, path []string, kv *unstable.Node, kind tableKind) error {
	path = append([]string(nil), path...)
	for it := kv.Key(); it.Next(); {
		n := it.Node()
		k := string(n.Data)
		b.keyOff = b.off(n)
		path = append(path, k)
		if it.IsLast() {
			if _, ok := t.keys[k]; ok {
				return b.errorf(n, path, "key %s is already defined", k)
			}
			v, err := b.value(kv.Value(), path)
			if err != nil {
				return err
			}
			t.keys[k] = v
			return nil
		}
		if sub, ok := t.tables[k]; ok {
			if sub.kind != kind {
				return b.errorf(n, path, "table %s is already defined; a dotted key cannot extend it", k)
			}
			t = sub
			continue
		}
		if _, ok := t.keys[k]; ok {
			return b.errorf(n, path, "key %s is already defined", k)
		}
		t = t.addTable(k, kind)
	}
	return nil
}

// value decodes a value node: arrays and inline tables whole (nothing can
// extend them later), strings and booleans as the parser read them, other
// scalars later, all at once (see decodeScalars). path is the value's key.
func (b *docBuilder) value(n *unstable.Node, path []string) (any, error) {
	switch n.Kind {
	case unstable.String:
		return string(n.Data), nil
	case unstable.Bool:
		return string(n.Data) == "true", nil
	case unstable.Array:
		out := []any{}
		for it := n.Children(); it.Next(); {
			c := it.Node()
			if c.Kind == unstable.Comment {
				continue
			}
			var ep []string
			if c.Kind == unstable.Array || c.Kind == unstable.InlineTable {
				ep = append(path[:len(path):len(path)], elem(len(out)))
			}
			v, err := b.value(c, ep)
			if err != nil {
				return nil, err
			}
			if s, ok := v.(*scalarSlot); ok {
				s.path, s.elem = path, len(out)
			}
			out = append(out, v)
		}
		return out, nil
	case unstable.InlineTable:
		t := newDocTable(headerTable)
		for it := n.Children(); it.Next(); {
			if c := it.Node(); c.Kind == unstable.KeyValue {
				if err := b.keyValue(t, path, c, headerTable); err != nil {
					return nil, err
				}
			}
		}
		return b.finish(t), nil
	case unstable.Integer, unstable.Float, unstable.LocalDate, unstable.LocalTime, unstable.LocalDateTime, unstable.DateTime:
		s := &scalarSlot{raw: n.Data, off: b.off(n), path: path, elem: -1}
		b.scalars = append(b.scalars, s)
		return s, nil
	}
	return nil, b.errorf(n, path, "unexpected %s value", n.Kind)
}

// scalarSlot stands for a number or date until decodeScalars decodes it.
type scalarSlot struct {
	raw  []byte
	off  int
	path []string // its key, or the key of its array
	elem int      // its index in that array, or -1
	v    any
}

// decodeScalars decodes every number and date with one toml.Unmarshal of
// an array of them all, so their syntax, range and type are go-toml's own
// at the cost of one document. If go-toml refuses the array, each is
// decoded alone to name the first it refuses.
func (b *docBuilder) decodeScalars() error {
	if len(b.scalars) == 0 {
		return nil
	}
	size := 4
	for _, s := range b.scalars {
		size += len(s.raw) + 1
	}
	doc := make([]byte, 0, size)
	doc = append(doc, "v=["...)
	for i, s := range b.scalars {
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = append(doc, s.raw...)
	}
	doc = append(doc, ']')
	var m struct{ V []any }
	if err := toml.Unmarshal(doc, &m); err == nil && len(m.V) == len(b.scalars) {
		for i, s := range b.scalars {
			s.v = m.V[i]
		}
		return nil
	}
	for _, s := range b.scalars {
		var one struct{ V any }
		if err := toml.Unmarshal(append([]byte("v="), s.raw...), &one); err != nil {
			path := s.path
			if s.elem >= 0 {
				path = append(path[:len(path):len(path)], elem(s.elem))
			}
			return &docError{off: s.off, path: path, msg: trimTOML(err.Error())}
		}
		s.v = one.V
	}
	return nil
}

func (b *docBuilder) errorf(n *unstable.Node, path []string, format string, args ...any) *docError {
	return &docError{off: b.off(n), path: append([]string(nil), path...), msg: fmt.Sprintf(format, args...)}
}

// finish turns a built table into the map: sub-tables and arrays of tables
// put in place of their placeholders.
func (b *docBuilder) finish(t *docTable) map[string]any {
	for k, sub := range t.tables {
		t.keys[k] = b.finish(sub)
	}
	for k, a := range t.arrays {
		list := make([]any, len(a.elems))
		for i, el := range a.elems {
			list[i] = b.finish(el)
		}
		t.keys[k] = list
	}
	return t.keys
}

// fill replaces every scalarSlot in v (decoded by now) with its value.
func fill(v any) any {
	switch v := v.(type) {
	case *scalarSlot:
		return v.v
	case map[string]any:
		for k, e := range v {
			switch e.(type) {
			case *scalarSlot, map[string]any, []any:
				v[k] = fill(e)
			}
		}
	case []any:
		for i, e := range v {
			switch e.(type) {
			case *scalarSlot, map[string]any, []any:
				v[i] = fill(e)
			}
		}
	}
	return v
}

func trimTOML(msg string) string {
	const p = "toml: "
	if len(msg) >= len(p) && msg[:len(p)] == p {
		return msg[len(p):]
	}
	return msg
}
