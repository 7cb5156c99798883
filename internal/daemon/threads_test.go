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

// TestNewRefusesMoreAgentsThanThreads: with host.max_threads = 1000, 744
// agents fit (744 + the 256 reserved) and 745 are refused with a message
// that says why and what to change, before anything starts.
func TestNewRefusesMoreAgentsThanThreads(t *testing.T) {
	doc := func(agents int) string {
		var b strings.Builder
		b.WriteString("version = 1\n[host]\nmax_threads = 1000\n")
		for i := range agents {
			fmt.Fprintf(&b, "[agent.a%d]\ncomponent = \"a.wasm\"\n", i)
		}
		return b.String()
	}
	for _, tc := range []struct {
		agents int
		ok     bool
	}{{744, true}, {745, false}} {
		t.Run(fmt.Sprint(tc.agents), func(t *testing.T) {
			cfg, err := config.Parse("/cfg/t.toml", []byte(doc(tc.agents)))
			if err != nil {
				t.Fatal(err)
			}
			d, err := New("/cfg/t.toml", cfg, nil)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				d.Close()
				return
			}
			want := "too many agents for this host: 745 agents need up to 1001 OS threads (one each while it waits in recv or a blocking call, and 256 for the runtime), more than host.max_threads = 1000; raise host.max_threads"
			if !errors.Is(err, ErrTooManyAgents) || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("got %v\nwant %s…", err, want)
			}
		})
	}
}

// TestNewRefusesMoreAgentsThanMappings: with vm.max_map_count at 9000,
// 1000 agents fit (1000 × 8 + 1000) and 1001 are refused, naming the
// sysctl to raise.
func TestNewRefusesMoreAgentsThanMappings(t *testing.T) {
	file := filepath.Join(t.TempDir(), "max_map_count")
	if err := os.WriteFile(file, []byte("9000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := maxMapCountFile
	maxMapCountFile = file
	t.Cleanup(func() { maxMapCountFile = old })
	for _, tc := range []struct {
		agents int
		ok     bool
	}{{1000, true}, {1001, false}} {
		t.Run(fmt.Sprint(tc.agents), func(t *testing.T) {
			var b strings.Builder
			b.WriteString("version = 1\n[host]\nmax_threads = 2000\n")
			for i := range tc.agents {
				fmt.Fprintf(&b, "[agent.a%d]\ncomponent = \"a.wasm\"\n", i)
			}
			cfg, err := config.Parse("/cfg/t.toml", []byte(b.String()))
			if err != nil {
				t.Fatal(err)
			}
			d, err := New("/cfg/t.toml", cfg, nil)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				d.Close()
				return
			}
			want := "too many agents for this host: 1001 agents need about 9008 memory mappings (8 each, and 1000 for the rest), more than vm.max_map_count = 9000; raise it (sysctl -w vm.max_map_count=16384)"
			if !errors.Is(err, ErrTooManyAgents) || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("got %v\nwant %s…", err, want)
			}
		})
	}
}
