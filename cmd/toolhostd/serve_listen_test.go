package main

import (
	"strings"
	"testing"
)

// TestServeControlListenFlag: --control-listen is checked before the
// daemon starts, and like [host] control_listen it needs a control_token.
func TestServeControlListenFlag(t *testing.T) {
	noConfig(t)
	dir := t.TempDir()
	p := writeConfigFile(t, dir, "notoken.toml", "version = 1\n")
	for _, tc := range []struct{ listen, want string }{
		{"7070", "--control-listen \"7070\": want host:port"},
		{"127.0.0.1:0", "control API on TCP needs a token"},
	} {
		code, _, stderr := runCLI(t, "--config", p, "serve", "--control-listen", tc.listen)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("serve --control-listen %s without a token: exit %d, stderr %q (want %q)", tc.listen, code, stderr, tc.want)
		}
	}
}
