// Package cluster holds the Kubernetes manifests of a toolhostd cluster:
// N replicas sharing one config's agents through a three-member etcd
// StatefulSet. Its test checks that they agree with each other and with
// the daemon: the config parses and names the StatefulSet's members, the
// probes point at the control API, both PodDisruptionBudgets select their
// pods and keep etcd's quorum, the grace period covers a leave.
package cluster

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

func TestManifestsParse(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) != 6 {
		t.Fatalf("manifests: %v %v", files, err)
	}
	for _, f := range files {
		doc := testenv.LoadYAML(t, f)
		if doc["apiVersion"] == nil || doc["kind"] == nil {
			t.Errorf("%s: no apiVersion or kind", f)
		}
	}
}

// shippedConfig is the config of configmap.yaml.
func shippedConfig(t *testing.T) *config.Config {
	t.Helper()
	cm := testenv.LoadYAML(t, "configmap.yaml")
	text, ok := testenv.At(t, cm, "data", "toolhostd.toml").(string)
	if !ok {
		t.Fatal("configmap has no data.toolhostd.toml")
	}
	cfg, err := config.Parse("configmap.yaml:toolhostd.toml", []byte(text))
	if err != nil {
		t.Fatalf("the shipped config does not parse:\n%v", err)
	}
	if cfg.Cluster == nil {
		t.Fatal("the shipped config has no [cluster]")
	}
	return cfg
}

// TestConfigNamesTheEtcdMembers: the endpoints are the StatefulSet's
// members, through its headless Service, on its client port; the
// initial cluster lists the same members.
func TestConfigNamesTheEtcdMembers(t *testing.T) {
	cfg := shippedConfig(t)
	ss := testenv.LoadYAML(t, "etcd-statefulset.yaml")
	svc := testenv.LoadYAML(t, "etcd-service.yaml")
	name := testenv.At(t, ss, "metadata", "name").(string)
	service := testenv.At(t, ss, "spec", "serviceName").(string)
	replicas := testenv.At(t, ss, "spec", "replicas").(int)
	if replicas != 3 || testenv.At(t, svc, "metadata", "name") != service || testenv.At(t, svc, "spec", "clusterIP") != "None" {
		t.Fatalf("want 3 etcd members behind a headless Service named %s", service)
	}
	var want, peers []string
	for i := range replicas {
		want = append(want, fmt.Sprintf("http://%s-%d.%s:2379", name, i, service))
		peers = append(peers, fmt.Sprintf("%s-%d=http://%s-%d.%s:2380", name, i, name, i, service))
	}
	if !slices.Equal(cfg.Cluster.Etcd.Endpoints, want) {
		t.Errorf("endpoints %v, want %v", cfg.Cluster.Etcd.Endpoints, want)
	}
	c := testenv.At(t, ss, "spec", "template", "spec", "containers", 0)
	if img := testenv.At(t, c, "image").(string); !strings.HasPrefix(img, "gcr.io/etcd-development/etcd:v3.") {
		t.Errorf("etcd image %s: want the official gcr.io/etcd-development/etcd:v3.x", img)
	}
	var args []string
	for _, a := range testenv.At(t, c, "args").([]any) {
		args = append(args, a.(string))
	}
	if !slices.Contains(args, "--initial-cluster="+strings.Join(peers, ",")) {
		t.Errorf("etcd args %v lack --initial-cluster=%s", args, strings.Join(peers, ","))
	}
	if testenv.At(t, ss, "spec", "podManagementPolicy") != "Parallel" {
		t.Error("etcd members must start in parallel: the initial cluster waits for all three")
	}
	for probe, path := range map[string]string{"livenessProbe": "/livez", "readinessProbe": "/readyz"} {
		if p := testenv.At(t, c, probe, "httpGet", "path"); p != path {
			t.Errorf("etcd %s path %v, want %s", probe, p, path)
		}
	}
}

// TestDeployment: replicas, probes on the control API, the token from the
// Secret, and a termination grace that covers a leave (the agents' capped
// stop grace) with room for the toolings.
func TestDeployment(t *testing.T) {
	cfg := shippedConfig(t)
	d := testenv.LoadYAML(t, "deployment.yaml")
	if n := testenv.At(t, d, "spec", "replicas").(int); n < 2 {
		t.Errorf("replicas %d: a cluster wants at least 2", n)
	}
	spec := testenv.At(t, d, "spec", "template", "spec")
	c := testenv.At(t, spec, "containers", 0)
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
	// Messages are forwarded between replicas: each advertises its pod IP.
	if cfg.Cluster.Advertise != "http://${env:POD_IP}:7070" {
		t.Errorf("cluster.advertise %q: the replicas must advertise http://${env:POD_IP}:7070", cfg.Cluster.Advertise)
	}
	podIP := testenv.At(t, c, "env", 1)
	if testenv.At(t, podIP, "name") != "POD_IP" || testenv.At(t, podIP, "valueFrom", "fieldRef", "fieldPath") != "status.podIP" {
		t.Errorf("POD_IP must come from status.podIP: %v", podIP)
	}
	if testenv.At(t, spec, "securityContext", "runAsNonRoot") != true {
		t.Error("the pod must run as non-root")
	}
	if testenv.At(t, spec, "volumes", 0, "configMap", "name") != testenv.At(t, testenv.LoadYAML(t, "configmap.yaml"), "metadata", "name") {
		t.Error("the pod does not mount the cluster's ConfigMap")
	}
	grace := time.Duration(testenv.At(t, spec, "terminationGracePeriodSeconds").(int)) * time.Second
	leave := cfg.Cluster.LeaseTTL.Duration/4 + 30*time.Second // capped agent stop grace, then the toolings
	if grace < leave {
		t.Errorf("terminationGracePeriodSeconds %s < %s: a leaving replica would be killed before its agents stopped", grace, leave)
	}
}

// TestDisruptionBudgets: each budget selects its pods; etcd keeps a
// quorum of its three members, toolhostd loses one replica at a time.
func TestDisruptionBudgets(t *testing.T) {
	for _, tc := range []struct{ pdb, workload, key string }{
		{"pdb-toolhostd.yaml", "deployment.yaml", "maxUnavailable"},
		{"pdb-etcd.yaml", "etcd-statefulset.yaml", "minAvailable"},
	} {
		pdb := testenv.LoadYAML(t, tc.pdb)
		w := testenv.LoadYAML(t, tc.workload)
		sel := testenv.At(t, pdb, "spec", "selector", "matchLabels").(map[string]any)
		labels := testenv.At(t, w, "spec", "template", "metadata", "labels").(map[string]any)
		for k, v := range sel {
			if labels[k] != v {
				t.Errorf("%s selects %s=%v, %s's pods have %v", tc.pdb, k, v, tc.workload, labels[k])
			}
		}
		n := testenv.At(t, pdb, "spec", tc.key).(int)
		switch tc.key {
		case "maxUnavailable":
			if n != 1 {
				t.Errorf("%s: maxUnavailable %d, want 1", tc.pdb, n)
			}
		case "minAvailable":
			if members := testenv.At(t, w, "spec", "replicas").(int); n != members/2+1 {
				t.Errorf("%s: minAvailable %d, want a quorum of %d members (%d)", tc.pdb, n, members, members/2+1)
			}
		}
	}
}
