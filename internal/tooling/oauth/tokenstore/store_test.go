package tokenstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

func TestSaveLoadDelete(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	s := New(state)
	if _, err := s.Load("remote"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Load before Save: %v", err)
	}
	exp := time.Now().Add(time.Hour).Round(time.Second)
	r := &Record{Resource: "https://h/mcp", Client: Client{ClientID: "c", TokenURL: "https://as/token", Scopes: []string{"read"}}}
	r.SetToken(&oauth2.Token{AccessToken: "a1", TokenType: "Bearer", RefreshToken: "r1", Expiry: exp}, time.Now())
	if err := s.Save("remote", r); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{s.Dir(): 0o700, s.Path("remote"): 0o600} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v, mode %v, want %v", p, err, st.Mode().Perm(), want)
		}
	}
	got, err := s.Load("remote")
	if err != nil {
		t.Fatal(err)
	}
	if got.AccessToken != "a1" || got.RefreshToken != "r1" || !got.Expiry.Equal(exp) || got.Config().Endpoint.TokenURL != "https://as/token" {
		t.Errorf("loaded %+v", got)
	}
	// A refresh without a new refresh token keeps the old one.
	got.SetToken(&oauth2.Token{AccessToken: "a2", Expiry: exp}, time.Now())
	if got.RefreshToken != "r1" || got.AccessToken != "a2" {
		t.Errorf("after SetToken: %+v", got)
	}
	v := s.Version("remote")
	if err := s.Save("remote", got); err != nil {
		t.Fatal(err)
	}
	if s.Version("remote") == v {
		t.Errorf("Version did not change with a save")
	}
	if ok, err := s.Delete("remote"); !ok || err != nil {
		t.Errorf("Delete = %v, %v", ok, err)
	}
	if ok, err := s.Delete("remote"); ok || err != nil {
		t.Errorf("second Delete = %v, %v", ok, err)
	}
	if s.Version("remote") != (Version{}) {
		t.Errorf("Version of a deleted record is not zero")
	}
}

func TestRefusesReadableFileAndBadNames(t *testing.T) {
	s := New(t.TempDir())
	if err := s.Save("x", &Record{Tokens: Tokens{AccessToken: "secret-value"}}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(s.Path("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := s.Load("x")
	if err == nil || !strings.Contains(err.Error(), "lets others read them") || strings.Contains(err.Error(), "secret-value") {
		t.Errorf("Load of a 0644 file: %v", err)
	}
	if err := os.WriteFile(s.Path("y"), []byte("not json secret-value"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("y"); err == nil || strings.Contains(err.Error(), "secret-value") {
		t.Errorf("Load of garbage: %v", err)
	}
	for _, name := range []string{"", "../x", "a/b", ".hidden"} {
		if err := s.Save(name, &Record{}); err == nil {
			t.Errorf("Save(%q) succeeded", name)
		}
	}
}

func TestLockExcludes(t *testing.T) {
	s := New(t.TempDir())
	unlock, err := s.Lock("x")
	if err != nil {
		t.Fatal(err)
	}
	var got atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		u, err := s.Lock("x") // another open file description: flock excludes it
		if err != nil {
			t.Error(err)
			return
		}
		got.Store(true)
		u()
	}()
	// No event says "still waiting": the window is the check.
	time.Sleep(100 * time.Millisecond)
	if got.Load() {
		t.Fatal("the second Lock did not wait")
	}
	unlock()
	<-done
	if !got.Load() {
		t.Fatal("the second Lock never got it")
	}
}
