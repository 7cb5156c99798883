// Package k8s holds toolhostd's Kubernetes manifests; its test parses them
// and checks that they agree with the daemon: the shipped config is valid,
// probes point at the control API's endpoints, the token comes from a Secret.
package k8s

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

func TestManifestsParse(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("manifests: %v %v", files, err)
	}
	for _, f := range files {
		doc := testenv.LoadYAML(t, f)
		if doc["apiVersion"] == nil || doc["kind"] == nil {
			t.Errorf("%s: no apiVersion or kind", f)
		}
	}
}

func TestConfigMapConfigIsValid(t *testing.T) {
	cm := testenv.LoadYAML(t, "configmap.yaml")
	text, ok := testenv.At(t, cm, "data", "toolhostd.toml").(string)
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
	d := testenv.LoadYAML(t, "deployment.yaml")
	c := testenv.At(t, d, "spec", "template", "spec", "containers", 0)
	if p := testenv.At(t, c, "livenessProbe", "httpGet", "path"); p != "/healthz" {
		t.Errorf("liveness probe path %v", p)
	}
	if p := testenv.At(t, c, "readinessProbe", "httpGet", "path"); p != "/readyz" {
		t.Errorf("readiness probe path %v", p)
	}
	env := testenv.At(t, c, "env", 0)
	if testenv.At(t, env, "name") != "TOOLHOSTD_CONTROL_TOKEN" || testenv.At(t, env, "valueFrom", "secretKeyRef", "name") != "toolhostd-control" {
		t.Errorf("the control token must come from the toolhostd-control Secret: %v", env)
	}
	if testenv.At(t, d, "spec", "template", "spec", "securityContext", "runAsNonRoot") != true {
		t.Error("the pod must run as non-root")
	}
	mounts := testenv.At(t, c, "volumeMounts").([]any)
	found := false
	for _, m := range mounts {
		if testenv.At(t, m, "mountPath") == "/var/cache/toolhostd" {
			found = true
		}
	}
	if !found {
		t.Error("no volume for the compile cache at /var/cache/toolhostd")
	}
}
