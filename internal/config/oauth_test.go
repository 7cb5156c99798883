package config

import (
	"path/filepath"
	"testing"
)

func TestStateDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, tc := range []struct{ systemd, xdg, set, want string }{
		{"", "", "", filepath.Join(home, ".local", "state", "toolhostd")},
		{"", "relative/ignored", "", filepath.Join(home, ".local", "state", "toolhostd")},
		{"", "/xdg", "", "/xdg/toolhostd"},
		{"/var/lib/toolhostd", "/xdg", "", "/var/lib/toolhostd"},
		{"/var/lib/a:/var/lib/b", "", "", "/var/lib/a"},
		{"relative", "/xdg", "", "/xdg/toolhostd"},
		{"/var/lib/toolhostd", "/xdg", "/srv/state", "/srv/state"},
	} {
		t.Setenv("STATE_DIRECTORY", tc.systemd)
		t.Setenv("XDG_STATE_HOME", tc.xdg)
		c := &Config{Host: Host{StateDir: tc.set}}
		if got := c.StateDir(); got != tc.want {
			t.Errorf("STATE_DIRECTORY=%q XDG_STATE_HOME=%q state_dir=%q: StateDir() = %q, want %q", tc.systemd, tc.xdg, tc.set, got, tc.want)
		}
	}
	// A relative state_dir is relative to the config file, and every oauth
	// tooling carries it.
	c, err := Parse("/srv/th/toolhostd.toml", []byte("version = 1\n[host]\nstate_dir = \"state\"\n[tooling.a]\nurl = \"https://h/mcp\"\noauth = {}\n[tooling.b]\nurl = \"https://h/mcp\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.StateDir(); got != "/srv/th/state" {
		t.Errorf("relative state_dir: StateDir() = %q", got)
	}
	if got := c.Tooling["a"].OAuth.StateDir; got != "/srv/th/state" {
		t.Errorf("tooling a's OAuth.StateDir = %q", got)
	}
	if c.Tooling["b"].OAuth != nil {
		t.Errorf("tooling b has no oauth table, got %+v", c.Tooling["b"].OAuth)
	}
}
