package cluster_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/cluster"
	"github.com/toolhostd/toolhostd/internal/config"
)

func TestClientConfig(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOOLHOSTD_TEST_ETCD_PASSWORD", "s3cret")
	base := func() *config.Cluster {
		return &config.Cluster{LeaseTTL: config.Duration{Duration: 10 * time.Second},
			Etcd: config.Etcd{Endpoints: []string{"http://127.0.0.1:2379"}, DialTimeout: config.Duration{Duration: time.Second}}}
	}
	for _, c := range []struct {
		name    string
		edit    func(*config.Cluster)
		wantErr string
		check   func(t *testing.T, user, password string, keepAlive time.Duration, tls bool)
	}{
		{name: "plain", edit: func(*config.Cluster) {}, check: func(t *testing.T, user, password string, keepAlive time.Duration, tls bool) {
			if user != "" || password != "" || tls || keepAlive != 2*time.Second {
				t.Errorf("user %q password %q tls %v keep-alive %v, want none, none, false, 2s", user, password, tls, keepAlive)
			}
		}},
		{name: "credentials expanded", edit: func(c *config.Cluster) {
			c.Etcd.Username, c.Etcd.Password = "host", "${env:TOOLHOSTD_TEST_ETCD_PASSWORD}"
		}, check: func(t *testing.T, user, password string, _ time.Duration, _ bool) {
			if user != "host" || password != "s3cret" {
				t.Errorf("user %q password %q, want host and the expanded secret", user, password)
			}
		}},
		{name: "server name only", edit: func(c *config.Cluster) { c.Etcd.TLS = &config.EtcdTLS{ServerName: "etcd"} },
			check: func(t *testing.T, _, _ string, _ time.Duration, tls bool) {
				if !tls {
					t.Error("no TLS config for etcd.tls")
				}
			}},
		{name: "missing CA", edit: func(c *config.Cluster) { c.Etcd.TLS = &config.EtcdTLS{CAFile: filepath.Join(dir, "none.pem")} },
			wantErr: "etcd.tls.ca_file"},
		{name: "CA not PEM", edit: func(c *config.Cluster) { c.Etcd.TLS = &config.EtcdTLS{CAFile: notPEM} },
			wantErr: "no PEM certificate"},
		{name: "missing client certificate", edit: func(c *config.Cluster) {
			c.Etcd.TLS = &config.EtcdTLS{CertFile: filepath.Join(dir, "c.pem"), KeyFile: filepath.Join(dir, "k.pem")}
		}, wantErr: "client certificate"},
		{name: "unset secret", edit: func(c *config.Cluster) { c.Etcd.Password = "${env:TOOLHOSTD_TEST_NO_SUCH_VAR}" },
			wantErr: "etcd.password"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cc := base()
			c.edit(cc)
			got, err := cluster.ClientConfig(cc, zap.NewNop())
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one naming %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Endpoints) != 1 || len(got.DialOptions) == 0 {
				t.Errorf("endpoints %v, %d dial options", got.Endpoints, len(got.DialOptions))
			}
			c.check(t, got.Username, got.Password, got.DialKeepAliveTime, got.TLS != nil)
		})
	}
}
