package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/config"
)

// TestNewRefusesMoreAgentsThanTheHostHolds: New refuses, before anything
// starts, a config with more agents than host.max_threads leaves threads
// for (agents + 256 reserved) or than vm.max_map_count leaves mappings for
// (8 per agent + 1000), saying why and what to change; one agent fewer
// fits.
func TestNewRefusesMoreAgentsThanTheHostHolds(t *testing.T) {
	for _, tc := range []struct {
		name                string
		maxThreads, maxMaps int
		agents              int
		want                string // "": accepted
	}{
		{"threads fit", 1000, 1 << 20, 744, ""},
		{"threads", 1000, 1 << 20, 745, "too many agents for this host: 745 agents need up to 1001 OS threads (one each while it waits in recv or a blocking call, and 256 for the runtime), more than host.max_threads = 1000; raise host.max_threads"},
		{"mappings fit", 2000, 9000, 1000, ""},
		{"mappings", 2000, 9000, 1001, "too many agents for this host: 1001 agents need about 9008 memory mappings (8 each, and 1000 for the rest), more than vm.max_map_count = 9000; raise it (sysctl -w vm.max_map_count=16384)"},
		{"per-session instances", 1000, 1 << 20, -1, "too many agents for this host: 800 agent instances (max_instances of each per-session agent) need up to 1056 OS threads"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "max_map_count")
			if err := os.WriteFile(file, []byte(fmt.Sprintf("%d\n", tc.maxMaps)), 0o644); err != nil {
				t.Fatal(err)
			}
			old := maxMapCountFile
			maxMapCountFile = file
			t.Cleanup(func() { maxMapCountFile = old })
			var b strings.Builder
			fmt.Fprintf(&b, "version = 1\n[host]\nmax_threads = %d\n", tc.maxThreads)
			for i := range tc.agents {
				fmt.Fprintf(&b, "[agent.a%d]\ncomponent = \"a.wasm\"\n", i)
			}
			if tc.agents < 0 { // two per-session agents of 400 instances each
				for i := range 2 {
					fmt.Fprintf(&b, "[agent.s%d]\ncomponent = \"a.wasm\"\ninstances = \"per-session\"\nmax_instances = 400\n", i)
				}
			}
			cfg, err := config.Parse("/cfg/t.toml", []byte(b.String()))
			if err != nil {
				t.Fatal(err)
			}
			d, err := New("/cfg/t.toml", cfg, Options{})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				d.Close()
				return
			}
			if !errors.Is(err, ErrTooManyAgents) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant %s…", err, tc.want)
			}
		})
	}
}
