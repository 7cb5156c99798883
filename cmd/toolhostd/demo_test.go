package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestDemoConfig runs make demo's last step on a copy of the repository's
// layout: configs/demo.toml validates, serve runs it with its socket and
// state under build/demo (no path a non-root user cannot write), and
// `send echo` through the config's socket gets echo's reply.
func TestDemoConfig(t *testing.T) {
	noConfig(t)
	root := testenv.Root(t)
	dir := t.TempDir()
	for _, d := range []string{"configs", filepath.Join("build", "agents")} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	shipped, err := os.ReadFile(filepath.Join(root, "configs", "demo.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := writeConfigFile(t, filepath.Join(dir, "configs"), "demo.toml", string(shipped))
	if err := os.Symlink(testenv.Agent(t, "agents", "echo"), filepath.Join(dir, "build", "agents", "echo.wasm")); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	for what, p := range map[string]string{"control_socket": cfg.Host.ControlSocket, "state_dir": cfg.StateDir()} {
		if !strings.HasPrefix(p, filepath.Join(dir, "build", "demo")+string(filepath.Separator)) {
			t.Errorf("%s %s is not under build/demo", what, p)
		}
	}
	if code, out, errs := runCLI(t, "config", "validate", cfgPath); code != 0 {
		t.Fatalf("config validate: exit %d\n%s%s", code, out, errs)
	}

	srv := startServe(t, cfgPath)
	waitFor(t, 60*time.Second, func() bool {
		code, _, _ := runCLI(t, "--config", cfgPath, "ps")
		return code == 0
	}, srv.out)
	code, out, errs := runCLI(t, "--config", cfgPath, "send", "echo", "hi from make demo", "--session", "demo")
	if code != 0 || out != "echo: hi from make demo (session demo)\n" {
		t.Errorf("send: exit %d, stdout %q\n%s\n%s", code, out, errs, srv.out.String())
	}
}
