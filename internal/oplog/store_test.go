package oplog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolterrors "go.etcd.io/bbolt/errors"
)

func TestOpenCreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "oplog", "oplog.db")
	s := testStore(t, Options{Path: path})
	if s.Path() != path {
		t.Errorf("Path %q, want %q", s.Path(), path)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700 | os.ModeDir} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
	}
}

func TestOpenInvalid(t *testing.T) {
	junk := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not a bbolt file\n", 1024)), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts Options
	}{
		{"no path", Options{}},
		{"negative batch", Options{Path: filepath.Join(t.TempDir(), "oplog.db"), MaxBatch: -1}},
		{"not bbolt", Options{Path: junk}},
	}
	for _, tt := range tests {
		if s, err := Open(tt.opts); err == nil {
			s.Close()
			t.Errorf("%s: Open succeeded", tt.name)
		} else if tt.opts.Path != "" && !strings.Contains(err.Error(), tt.opts.Path) {
			t.Errorf("%s: error %q does not name the file", tt.name, err)
		}
	}
}

// TestOpenLocked: a file open in one Store is locked against another, of
// this process or any, and the second Open fails within the lock timeout.
func TestOpenLocked(t *testing.T) {
	s := testStore(t, Options{})
	start := time.Now()
	s2, err := Open(Options{Path: s.Path()})
	if err == nil {
		s2.Close()
		t.Fatal("a second Open of an open file succeeded")
	}
	if d := time.Since(start); d > lockTimeout+5*time.Second {
		t.Errorf("the second Open took %v", d)
	}
	if !errors.Is(err, bolterrors.ErrTimeout) || !strings.Contains(err.Error(), s.Path()) {
		t.Errorf("error %q: want a timeout naming the file", err)
	}
	openLog(t, s, "agent").Close() // the first is unharmed
}
