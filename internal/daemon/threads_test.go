package daemon

import (
	"errors"
	"fmt"
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
			want := "too many agents for host.max_threads: 745 agents need up to 1001 OS threads (one each while it waits in recv or a blocking call, and 256 for the runtime), more than host.max_threads = 1000; raise host.max_threads"
			if !errors.Is(err, ErrTooManyAgents) || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("got %v\nwant %s…", err, want)
			}
		})
	}
}
