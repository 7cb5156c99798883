package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/toolhostd/toolhostd/internal/config"
)

// ClientConfig is the etcd client's config of a host's [cluster] c: its
// endpoints, credentials (expanded here, config.Expand) and
// TLS (CA, client certificate), keep-alives at a fifth of the lease TTL,
// DialOptions' reconnection backoff, and log's warnings.
func ClientConfig(c *config.Cluster, log *zap.Logger) (clientv3.Config, error) {
	e := c.Etcd
	cc := clientv3.Config{
		Endpoints: e.Endpoints, DialTimeout: e.DialTimeout.Duration,
		DialKeepAliveTime: c.LeaseTTL.Duration / 5, DialKeepAliveTimeout: c.LeaseTTL.Duration / 5,
		Logger:      log.Named("etcd").WithOptions(zap.IncreaseLevel(zapcore.WarnLevel)),
		DialOptions: DialOptions(),
	}
	var err error
	if cc.Username, err = config.Expand(e.Username); err != nil {
		return cc, fmt.Errorf("cluster: etcd.username: %w", err)
	}
	if cc.Password, err = config.Expand(e.Password); err != nil {
		return cc, fmt.Errorf("cluster: etcd.password: %w", err)
	}
	if t := e.TLS; t != nil {
		tc := &tls.Config{ServerName: t.ServerName, MinVersion: tls.VersionTLS12}
		if t.CAFile != "" {
			pem, err := os.ReadFile(t.CAFile)
			if err != nil {
				return cc, fmt.Errorf("cluster: etcd.tls.ca_file: %w", err)
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return cc, fmt.Errorf("cluster: etcd.tls.ca_file %s: no PEM certificate", t.CAFile)
			}
		}
		if t.CertFile != "" {
			cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
			if err != nil {
				return cc, fmt.Errorf("cluster: etcd.tls client certificate: %w", err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		cc.TLS = tc
	}
	return cc, nil
}
