// Package systemd holds toolhostd's systemd unit; its test checks the unit
// with systemd-analyze where the machine has it.
package systemd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnitVerifies runs systemd-analyze verify on the unit, with ExecStart
// pointed at an executable that exists here (verify checks it).
func TestUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed on this machine")
	}
	unit, err := os.ReadFile("toolhostd.service")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	text := strings.ReplaceAll(string(unit), "ExecStart=/usr/local/bin/toolhostd", "ExecStart=/bin/true")
	path := filepath.Join(dir, "toolhostd.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", "--man=no", path).CombinedOutput()
	// verify prints problems even when it exits 0; only lines about our unit count.
	var problems []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "toolhostd.service") {
			problems = append(problems, line)
		}
	}
	if err != nil || len(problems) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

func TestUnitHasTheContract(t *testing.T) {
	unit, err := os.ReadFile("toolhostd.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Type=notify", "ExecReload=/bin/kill -HUP $MAINPID", "User=toolhostd",
		"StateDirectory=toolhostd", "CacheDirectory=toolhostd", "RuntimeDirectory=toolhostd", "ConfigurationDirectory=toolhostd",
		"ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes", "WatchdogSec=", "KillMode=mixed",
		"ExecStart=/usr/local/bin/toolhostd serve",
	} {
		if !strings.Contains(string(unit), "\n"+want) {
			t.Errorf("toolhostd.service lacks %q", want)
		}
	}
}
