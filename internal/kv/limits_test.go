package kv_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/kv"
)

// TestBigValueExportImport: a bbolt value past the etcd backend's limit
// (4 MiB) exports, and the export imports back unchanged.
func TestBigValueExportImport(t *testing.T) {
	s, c := kv.New(boltStore(t), kv.Options{}), ctx(t)
	ref := kv.Ref{Agent: "a", Bucket: "notes"}
	big := bytes.Repeat([]byte{0, 1, 0xfe, 'x'}, 1<<20)
	if err := s.Put(c, ref, "big", big); err != nil {
		t.Fatal(err)
	}
	var export bytes.Buffer
	if n, err := s.Export(c, &export, "", ""); err != nil || n != 1 {
		t.Fatalf("export: %d %v", n, err)
	}
	if err := s.Remove(c, ref, "big"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Import(c, &export); err != nil || n != 1 {
		t.Fatalf("import of a 4 MiB value: %d %v", n, err)
	}
	if v, ok, err := s.Get(c, ref, "big"); err != nil || !ok || !bytes.Equal(v, big) {
		t.Errorf("the imported value: %d bytes, %v %v; want the 4 MiB put", len(v), ok, err)
	}
}

// TestValueLimit: every writer (an operator's put, a guest's set and
// swap, an import) is refused a value past kv.MaxValue, with an error
// naming the store's limit, and writes nothing; a value of MaxValue is
// kept.
func TestValueLimit(t *testing.T) {
	s, c := kv.New(boltStore(t), kv.Options{}), ctx(t)
	ref := kv.Ref{Agent: "a", Bucket: "kv"}
	b := open(t, s, "a", "", kv.Policy{}, "kv")
	over := make([]byte, kv.MaxValue+1)
	// The export's line of over (zeros, a multiple of 3 bytes: base64 all A).
	line := `{"agent":"a","bucket":"kv","key":"k","value":"` + strings.Repeat("A", base64.StdEncoding.EncodedLen(len(over))) + `"}` + "\n"
	writers := []struct {
		name  string
		write func() error
	}{
		{"put", func() error { return s.Put(c, ref, "k", over) }},
		{"set", func() error { return b.Set(c, "k", over) }},
		{"swap", func() error {
			cas, err := b.NewCAS(c, "k")
			if err != nil {
				return err
			}
			_, err = cas.Swap(c, over)
			return err
		}},
		{"import", func() error { _, err := s.Import(c, strings.NewReader(line)); return err }},
	}
	for _, w := range writers {
		err := w.write()
		var big *kv.TooLargeError
		if !errors.As(err, &big) || big.Limit != kv.MaxValue || !strings.Contains(err.Error(), "the store's limit is 33554432 bytes (32 MiB)") {
			t.Errorf("%s of MaxValue+1 bytes: %v, want a TooLargeError naming the store's limit", w.name, err)
		}
		if _, ok, err := s.Get(c, ref, "k"); err != nil || ok {
			t.Errorf("after the refused %s: the key is set (%v %v)", w.name, ok, err)
		}
	}
	if err := s.Put(c, ref, "k", over[:kv.MaxValue]); err != nil {
		t.Errorf("put of MaxValue bytes: %v", err)
	}
}
