package container

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

func str(t *testing.T, v any, path ...any) string {
	t.Helper()
	s := fmt.Sprint(testenv.At(t, v, path...))
	return s
}

// runKubernetes runs deploy/k8s's Deployment against the layout: the image's
// ENTRYPOINT with the container's args, the image's ENV plus the
// container's env (the Secret's token made up here), the ConfigMap's files
// where it is mounted, a fresh directory for each emptyDir (the compile
// cache's stays the layout's, as a container restart in the pod would find
// it), as runAsUser; then the probes' paths on the control port, every
// agent running and a clean SIGTERM.
func runKubernetes(t *testing.T, l *layout, im image) {
	k8s := filepath.Join(l.repo, "deploy", "k8s")
	cm := testenv.LoadYAML(t, filepath.Join(k8s, "configmap.yaml"))
	dep := testenv.LoadYAML(t, filepath.Join(k8s, "deployment.yaml"))
	pod := testenv.At(t, dep, "spec", "template", "spec")
	ctr := testenv.At(t, pod, "containers", 0)

	if uid, _, _ := strings.Cut(im.user, ":"); str(t, pod, "securityContext", "runAsUser") != uid {
		t.Errorf("the pod's runAsUser %s is not the image's USER %s", str(t, pod, "securityContext", "runAsUser"), im.user)
	}
	var port string
	for _, p := range testenv.At(t, ctr, "ports").([]any) {
		if str(t, p, "name") == "control" {
			port = str(t, p, "containerPort")
		}
	}
	if port == "" {
		t.Fatal("the container has no port named control")
	}

	// Volumes: the ConfigMap's files, or an emptyDir.
	cmName := str(t, cm, "metadata", "name")
	volumes := map[string]any{}
	for _, v := range testenv.At(t, pod, "volumes").([]any) {
		volumes[str(t, v, "name")] = v
	}
	dir := filepath.Dir(l.root)
	m := mapping{}
	var configDir string
	cache := filepath.Join(envValue(t, im, "XDG_CACHE_HOME"), "toolhostd")
	for _, vm := range testenv.At(t, ctr, "volumeMounts").([]any) {
		mp, name := str(t, vm, "mountPath"), str(t, vm, "name")
		vol, ok := volumes[name].(map[string]any)
		if !ok {
			t.Fatalf("volumeMount %s: no volume %q", mp, name)
		}
		switch {
		case vol["configMap"] != nil:
			if str(t, vol, "configMap", "name") != cmName {
				t.Fatalf("volume %s mounts ConfigMap %s, not %s", name, str(t, vol, "configMap", "name"), cmName)
			}
			configDir = filepath.Join(dir, "k8s-"+name)
			m[mp] = configDir
		case vol["emptyDir"] != nil && mp == cache:
			m[mp] = l.imagePath(mp)
		case vol["emptyDir"] != nil:
			d := filepath.Join(dir, "k8s-"+name)
			if err := os.MkdirAll(d, 0o750); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(d, l.uid, l.gid); err != nil {
				t.Fatal(err)
			}
			m[mp] = d
		default:
			t.Fatalf("volume %s: neither a ConfigMap nor an emptyDir", name)
		}
	}
	if configDir == "" {
		t.Fatal("the ConfigMap is not mounted")
	}

	// The ConfigMap's config, its control port on a free loopback port.
	text := str(t, cm, "data", "toolhostd.toml")
	cfg, err := config.Parse("configmap.yaml:toolhostd.toml", []byte(text))
	if err != nil {
		t.Fatalf("the ConfigMap's config:\n%v", err)
	}
	if _, p, _ := net.SplitHostPort(cfg.Host.ControlListen); p != port {
		t.Fatalf("the ConfigMap's control_listen %q is not on the container's control port %s", cfg.Host.ControlListen, port)
	}
	addr := freeAddr(t)
	text = strings.Replace(text, strconv.Quote(cfg.Host.ControlListen), strconv.Quote(addr), 1)
	if err := os.MkdirAll(configDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for key := range testenv.At(t, cm, "data").(map[string]any) {
		body := str(t, cm, "data", key)
		if key == "toolhostd.toml" {
			body = l.rewrite(text, m)
		}
		if err := os.WriteFile(filepath.Join(configDir, key), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	agents := agentNames(t, "configmap.yaml:toolhostd.toml", text)
	for _, a := range cfg.Agent {
		if _, err := os.Stat(l.resolve(a.Component, m)); err != nil {
			t.Errorf("the ConfigMap's agent component %s is not in the image: %v", a.Component, err)
		}
	}

	// The container's env: literal values, and the Secret's token.
	tok := token(t)
	var extra []string
	if envs, ok := testenv.At(t, ctr, "env").([]any); ok {
		for _, e := range envs {
			name := str(t, e, "name")
			if v, ok := e.(map[string]any)["value"]; ok {
				extra = append(extra, name+"="+fmt.Sprint(v))
			} else {
				str(t, e, "valueFrom", "secretKeyRef", "name")
				extra = append(extra, name+"="+tok)
			}
		}
	}
	var args []string
	for _, a := range testenv.At(t, ctr, "args").([]any) {
		args = append(args, fmt.Sprint(a))
	}
	env := l.environ(im, m, extra...)
	d := l.start(t, l.command(t, im, m, env, append(append([]string{}, im.entrypoint...), args...)...))

	d.waitHTTP(t, addr, str(t, ctr, "readinessProbe", "httpGet", "path"))
	if code, err := httpStatus(addr, str(t, ctr, "livenessProbe", "httpGet", "path"), ""); err != nil || code != http.StatusOK {
		t.Errorf("the liveness probe: %d %v", code, err)
	}
	c, err := control.DialTCP(addr, tok)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d.waitAgentsRunning(t, agents, c.Agents)
	d.stop(t)
}
