package system_test

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/cluster"
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/system"
)

// TestNewServe: serve's graph, on one host and as a cluster host (its etcd
// client made, no request sent: the endpoint answers nothing), has each of
// its parts, caps the stop grace at the cluster's stop budget, and closes
// without leaving a goroutine (TestMain's goleak); an endpoint that cannot
// bind fails NewServe, and what it had built is closed.
func TestNewServe(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		name, extra string
		cluster     bool
		forwards    bool
		err         string
	}{
		{name: "one host"},
		{name: "cluster", cluster: true,
			extra: "[cluster]\nname = \"a\"\nlease_ttl = \"3s\"\netcd = { endpoints = [\"http://127.0.0.1:1\"] }\n"},
		{name: "cluster with a control token", cluster: true, forwards: true,
			extra: "[cluster]\nname = \"a\"\nlease_ttl = \"3s\"\netcd = { endpoints = [\"http://127.0.0.1:1\"] }\n"},
		{name: "endpoint taken", extra: "[agent.a]\ncomponent = \"a.wasm\"\naccepts = [\"api\", \"mcp\"]\nexpose = [\"mcp\"]\n", err: "address already in use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			host := fmt.Sprintf("[host]\nstate_dir = %q\n", filepath.Join(dir, "state"))
			if tc.forwards {
				host += "control_token = \"t\"\n"
			}
			if tc.err != "" {
				host += fmt.Sprintf("mcp = { listen = %q }\n", taken.Addr().String())
			}
			cfg, err := config.Parse(filepath.Join(dir, "toolhostd.toml"), []byte("version = 1\n"+host+"\n"+tc.extra))
			if err != nil {
				t.Fatal(err)
			}
			g, err := system.NewServe(cfg, system.ServeOptions{Metrics: true, Runner: idleRunner{},
				Placement: func() cluster.Placement { return cluster.Placement{} }})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("NewServe: %v, want an error saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.System == nil || g.Host == nil || g.Agents == nil || g.Router == nil || g.Endpoints == nil || g.Metrics == nil {
				t.Errorf("a part is missing: %+v", g)
			}
			grace := time.Hour
			if c := g.Cluster; tc.cluster {
				switch {
				case c == nil || c.Etcd == nil || c.Node == nil || c.Ledger == nil:
					t.Errorf("cluster parts %+v", c)
				case (c.Forwarder != nil) != tc.forwards:
					t.Errorf("forwarder %v, want one: %v", c.Forwarder, tc.forwards)
				}
				grace = cluster.StopBudget(3 * time.Second)
			} else if c != nil {
				t.Errorf("cluster parts %+v without [cluster]", c)
			}
			if got := g.StopGrace(time.Hour); got != grace {
				t.Errorf("StopGrace(1h) = %v, want %v", got, grace)
			}
			if err := g.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

// idleRunner is a cluster node's runner that runs nothing (the node of
// TestNewServe is never run).
type idleRunner struct{}

func (idleRunner) Start(string)        {}
func (idleRunner) Stop(string)         {}
func (idleRunner) State(string) string { return "" }
func (idleRunner) Started(string) bool { return false }
