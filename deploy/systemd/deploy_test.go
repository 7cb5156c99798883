// Package systemd holds toolhostd's systemd unit; its test checks the unit
// with systemd-analyze where the machine has it.
package systemd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/config"
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

// TestClusterDropIn: the cluster drop-in verifies with the unit (where
// systemd-analyze exists), and the [cluster] table its comment shows
// parses, reading the password from the credential the drop-in loads.
func TestClusterDropIn(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("toolhostd.service.d", "cluster.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var toml strings.Builder
	toml.WriteString("version = 1\n")
	in := false
	for _, line := range strings.Split(string(text), "\n") {
		if line == "# [cluster]" {
			in = true
		}
		if in && !strings.HasPrefix(line, "# ") {
			break
		}
		if in {
			toml.WriteString(strings.TrimPrefix(line, "# ") + "\n")
		}
	}
	cfg, err := config.Parse("cluster.conf", []byte(toml.String()))
	if err != nil {
		t.Fatalf("the drop-in's [cluster] example does not parse:\n%v\n%s", err, toml.String())
	}
	if len(cfg.Cluster.Etcd.Endpoints) != 3 || !strings.Contains(cfg.Cluster.Etcd.Password, "/run/credentials/toolhostd.service/etcd-password") {
		t.Errorf("example: %+v", cfg.Cluster.Etcd)
	}
	if !strings.Contains(string(text), "\nLoadCredential=etcd-password:") {
		t.Error("the drop-in does not load the etcd-password credential the example reads")
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		return // the verification needs systemd-analyze; the checks above ran
	}
	unit, err := os.ReadFile("toolhostd.service")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "toolhostd.service"), []byte(strings.ReplaceAll(string(unit), "ExecStart=/usr/local/bin/toolhostd", "ExecStart=/bin/true")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "toolhostd.service.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "toolhostd.service.d", "cluster.conf"), text, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", "--man=no", filepath.Join(dir, "toolhostd.service")).CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "cluster.conf") || strings.Contains(line, "toolhostd.service") {
			t.Errorf("systemd-analyze verify: %s", line)
		}
	}
	if err != nil {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
