// Package k8s holds toolhostd's Kubernetes manifests; its test parses them
// and checks that they agree with the daemon: the shipped config is valid,
// probes point at the control API's endpoints, the token comes from a Secret.
package k8s

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/toolhostd/toolhostd/internal/config"
)

func load(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return doc
}

// dig walks maps and lists by key or index.
func dig(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not a map at %q", path, k)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("%v: no element %d", path, k)
			}
			v = l[k]
		}
	}
	return v
}

func TestManifestsParse(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("manifests: %v %v", files, err)
	}
	for _, f := range files {
		doc := load(t, f)
		if doc["apiVersion"] == nil || doc["kind"] == nil {
			t.Errorf("%s: no apiVersion or kind", f)
		}
	}
}

func TestConfigMapConfigIsValid(t *testing.T) {
	cm := load(t, "configmap.yaml")
	text, ok := dig(t, cm, "data", "toolhostd.toml").(string)
	if !ok {
		t.Fatal("configmap has no data.toolhostd.toml")
	}
	cfg, err := config.Parse("configmap.yaml:toolhostd.toml", []byte(text))
	if err != nil {
		t.Fatalf("the shipped config does not parse:\n%v", err)
	}
	if cfg.Host.ControlListen == "" || !strings.HasPrefix(cfg.Host.ControlToken, "${env:") {
		t.Errorf("the control API must listen on TCP with a token from the environment: %+v", cfg.Host)
	}
}

func TestDeploymentProbesAndSecrets(t *testing.T) {
	d := load(t, "deployment.yaml")
	c := dig(t, d, "spec", "template", "spec", "containers", 0)
	if p := dig(t, c, "livenessProbe", "httpGet", "path"); p != "/healthz" {
		t.Errorf("liveness probe path %v", p)
	}
	if p := dig(t, c, "readinessProbe", "httpGet", "path"); p != "/readyz" {
		t.Errorf("readiness probe path %v", p)
	}
	env := dig(t, c, "env", 0)
	if dig(t, env, "name") != "TOOLHOSTD_CONTROL_TOKEN" || dig(t, env, "valueFrom", "secretKeyRef", "name") != "toolhostd-control" {
		t.Errorf("the control token must come from the toolhostd-control Secret: %v", env)
	}
	if dig(t, d, "spec", "template", "spec", "securityContext", "runAsNonRoot") != true {
		t.Error("the pod must run as non-root")
	}
	mounts := dig(t, c, "volumeMounts").([]any)
	found := false
	for _, m := range mounts {
		if dig(t, m, "mountPath") == "/var/cache/toolhostd" {
			found = true
		}
	}
	if !found {
		t.Error("no volume for the compile cache at /var/cache/toolhostd")
	}
}
