package host

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestWorldVersions: a component of any version of the world loads and
// runs (here one importing only log, at 0.1.0, 0.2.0 and 0.3.0); one importing
// interfaces of both versions is refused at load, naming both.
func TestWorldVersions(t *testing.T) {
	s := env(t)
	logImport := func(version string) string {
		return `(import "toolhost:agent/log@` + version + `" (instance $log` + version[2:3] + `
    (type $level (enum "debug" "info" "warn" "error"))
    (export "level" (type $lvl (eq $level)))
    (export "write" (func (param "level" $lvl) (param "message" string)))))
`
	}
	for _, tc := range []struct {
		name, wat, refused string
	}{
		{"0.1.0", watFlood, ""},
		{"0.2.0", strings.Replace(watFlood, "log@0.1.0", "log@0.2.0", 1), ""},
		{"0.3.0", strings.Replace(watFlood, "log@0.1.0", "log@0.3.0", 1), ""},
		{"mixed", strings.Replace(watFlood, "(component\n", "(component\n  "+logImport("0.2.0"), 1),
			"it imports both toolhost:agent/log@0.2.0 and toolhost:agent/log@0.1.0: interfaces of toolhost:agent@0.2.0 and @0.1.0 cannot be mixed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := s.host.Load("versions-"+tc.name, []byte(tc.wat))
			if tc.refused != "" {
				if !errors.Is(err, ErrBadComponent) || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("load = %v, want ErrBadComponent saying %q", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if out, err := waitAgent(t, s.host.Start(p, AgentConfig{Name: "versions"}, "x"), 30*time.Second); err != nil || out != "flood" {
				t.Fatalf("run = %q, %v", out, err)
			}
		})
	}
}
