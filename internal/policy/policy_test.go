package policy

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/tooling"
)

func TestPatternMatch(t *testing.T) {
	cases := []struct {
		pat, s string
		want   bool
	}{
		{"read_file", "read_file", true},
		{"read_file", "read_files", false},
		{"read_*", "read_file", true},
		{"read_*", "read_", true},
		{"read_*", "write_file", false},
		{"*_file", "read_file", true},
		{"*", "", true},
		{"?", "", false},
		{"?", "é", true}, // one character, not one byte
		{"read_?ile", "read_file", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		// In a uri, * stays within a segment and ** crosses '/'.
		{"file:///srv/data/*", "file:///srv/data/a.txt", true},
		{"file:///srv/data/*", "file:///srv/data/sub/a.txt", false},
		{"file:///srv/data/*", "file:///srv/database", false},
		{"file:///srv/data/**", "file:///srv/data/sub/a.txt", true},
		{"file:///srv/data/**", "file:///srv/data/", true},
		{"file:///srv/*/a.txt", "file:///srv/data/a.txt", true},
		{"file:///srv/*/a.txt", "file:///srv/x/y/a.txt", false},
		{"file:///srv/**/a.txt", "file:///srv/x/y/a.txt", true},
		{"file:///srv/**.txt", "file:///srv/x/y/a.txt", true},
		{"file:///srv/*.txt", "file:///srv/x/a.txt", false},
		{"test://static/resource/?", "test://static/resource/1", true},
		{"test://static/resource/?", "test://static/resource/12", false},
		{"mem://?/x", "mem:///x", false}, // ? does not match '/'
	}
	for _, c := range cases {
		if got := Compile(c.pat).Match(c.s); got != c.want {
			t.Errorf("%q.Match(%q) = %v, want %v", c.pat, c.s, got, c.want)
		}
		// The general matcher agrees with the fast paths.
		if got := match(c.pat, c.s); got != c.want {
			t.Errorf("match(%q, %q) = %v, want %v", c.pat, c.s, got, c.want)
		}
	}
}

type rec struct {
	mu      sync.Mutex
	denied  []string
	limited []string
}

func (r *rec) PolicyDenied(agent, tooling, op string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.denied = append(r.denied, agent+"/"+tooling+"/"+op)
}

func (r *rec) AgentLimited(agent, tooling, limit string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.limited = append(r.limited, agent+"/"+tooling+"/"+limit)
}

func TestToolsDenyResources(t *testing.T) {
	r := &rec{}
	a := New("reader", map[string]Rules{
		"fs":   {Tools: []string{"read_*", "list_*"}, DenyTools: []string{"read_media_file"}, Resources: []string{"file:///srv/*"}},
		"none": {Tools: []string{}, Resources: []string{}},
	}, Options{Recorder: r})
	fs, none, other := a.View("fs"), a.View("none"), a.View("other")
	for tool, want := range map[string]bool{"read_file": true, "list_directory": true, "read_media_file": false, "write_file": false} {
		if got := fs.Grant().AllowTool(tool); got != want {
			t.Errorf("fs allows %q: %v, want %v", tool, got, want)
		}
	}
	err := fs.Tool("call-tool", "write_file")
	if err == nil || err.Code != tooling.CodeDenied || !strings.Contains(err.Message, `"write_file"`) || !strings.Contains(err.Message, "agent.reader.grants.fs.tools") {
		t.Errorf("denied write_file: %v", err)
	}
	err = fs.Tool("call-tool-blocking", "read_media_file")
	if err == nil || !strings.Contains(err.Message, `agent.reader.grants.fs.deny_tools has "read_media_file"`) {
		t.Errorf("denied read_media_file: %v", err)
	}
	if err := fs.URI("read-resource", "file:///etc/passwd"); err == nil || err.Code != tooling.CodeDenied || !strings.Contains(err.Message, "agent.reader.grants.fs.resources") {
		t.Errorf("denied uri: %v", err)
	}
	if err := fs.URI("read-resource", "file:///srv/a"); err != nil {
		t.Errorf("allowed uri: %v", err)
	}
	if none.Grant().AllowTool("x") || none.Grant().AllowURI("x") {
		t.Error("empty lists allow something")
	}
	if other.Grant() != nil || other.Tool("call-tool", "anything") != nil || other.URI("read-resource", "any://x") != nil {
		t.Error("a tooling without a grants table is narrowed")
	}
	if want := []string{"reader/fs/call-tool", "reader/fs/call-tool-blocking", "reader/fs/read-resource"}; strings.Join(r.denied, " ") != strings.Join(want, " ") {
		t.Errorf("denials recorded %v, want %v", r.denied, want)
	}
}

func TestLimits(t *testing.T) {
	r := &rec{}
	now := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	a := New("a", map[string]Rules{"t": {MaxConcurrentCalls: 2}, "r": {CallsPerSecond: 3}},
		Options{Recorder: r, Clock: func() time.Time { return now }})
	v := a.View("t")
	for i := range 2 {
		if err := v.Acquire(); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	err := v.Acquire()
	if err == nil || err.Code != tooling.CodeBusy || !strings.Contains(err.Message, "max_concurrent_calls = 2") {
		t.Fatalf("third concurrent call: %v", err)
	}
	v.Release()
	if err := v.Acquire(); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	// The bucket holds calls_per_second tokens (burst = rate) and refills
	// at that rate; the clock stands still until the test moves it.
	rv := a.View("r")
	for i := range 3 {
		if err := rv.Acquire(); err != nil {
			t.Fatalf("call %d within the burst: %v", i, err)
		}
		rv.Release()
	}
	err = rv.Acquire()
	if err == nil || err.Code != tooling.CodeBusy || !strings.Contains(err.Message, "calls_per_second = 3") {
		t.Fatalf("over the rate: %v", err)
	}
	now = now.Add(time.Second / 3) // one call's worth
	if err := rv.Acquire(); err != nil {
		t.Fatalf("after a third of a second: %v", err)
	}
	rv.Release()
	if err := rv.Acquire(); err == nil {
		t.Fatal("a second call within the third of a second")
	}
	if want := "a/t/max_concurrent_calls a/r/calls_per_second a/r/calls_per_second"; strings.Join(r.limited, " ") != want {
		t.Errorf("limits recorded %v, want %v", r.limited, want)
	}
	// Update: the running calls carry over under the new limit.
	a.Update(map[string]Rules{"t": {MaxConcurrentCalls: 3}})
	if err := v.Acquire(); err != nil {
		t.Fatalf("under the raised limit: %v", err)
	}
	if err := v.Acquire(); err == nil {
		t.Fatal("4 calls running under max_concurrent_calls = 3")
	}
	if a.View("r").Grant() != nil {
		t.Error("a grant removed by Update is still in force")
	}
}
