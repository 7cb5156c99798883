// Package low is a fixture: the bottom floor of the fixture module.
package low

// Put is a function a path may name.
func Put() {}

// Store has a method a path may name.
type Store struct{}

// Get is a method a path may name.
func (s *Store) Get() {}

// Iface has a method a path may name.
type Iface interface{ Do() }

// Table is generic; its method is named Table.Len.
type Table[K comparable] struct{ m map[K]int }

// Len is a method of a generic type.
func (t *Table[K]) Len() int { return len(t.m) }
