package config

// The [cluster] table: this host is one of several that share the agents
// of one config through etcd (see internal/cluster).

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

// Defaults of the [cluster] keys.
const (
	DefaultLeaseTTL       = 10 * time.Second
	DefaultClusterPrefix  = "/toolhostd"
	DefaultSettle         = 5 * time.Second
	DefaultMovesPerSecond = 10
	DefaultDialTimeout    = 5 * time.Second
	// MinLeaseTTL is the shortest lease_ttl: etcd leases count whole
	// seconds, and the fencing schedule (internal/cluster) needs room for
	// renewals within it.
	MinLeaseTTL = 2 * time.Second
)

// Cluster is the [cluster] table. Without it toolhostd is a single host
// that runs every configured agent.
type Cluster struct {
	Etcd Etcd `toml:"etcd"`
	// Name is this host's identity among the members (default: the
	// hostname); two live hosts never share one.
	Name string `toml:"name"`
	// LeaseTTL is the TTL of this host's etcd lease, a whole number of
	// seconds: a host that dies loses its agents to the others after it.
	LeaseTTL Duration `toml:"lease_ttl"`
	// Prefix is the etcd key prefix of the cluster's keys (no trailing /).
	Prefix string `toml:"prefix"`
	// Settle is how long a member must have been seen, without leaving,
	// before agents are placed on it: a flapping member does not make
	// agents bounce.
	Settle Duration `toml:"settle"`
	// MovesPerSecond bounds how many running agents this host hands over
	// to another per second.
	MovesPerSecond float64 `toml:"moves_per_second"`
	// Advertise is the URL at which the other hosts reach this host's
	// control API (http://host:port), published with its member key: a
	// message for an agent this host runs is forwarded there. It may hold
	// ${env:...} references (a pod's IP), expanded at start. Default:
	// http:// and [host] control_listen, unless that is a wildcard address.
	Advertise string `toml:"advertise,omitempty"`
}

// Etcd is [cluster] etcd: how to reach the etcd cluster.
type Etcd struct {
	// Endpoints are the etcd client URLs (http://host:2379, https://...).
	Endpoints []string `toml:"endpoints"`
	// Username and Password authenticate to etcd; Password is usually a
	// ${env:...} or ${file:...} reference: call Expand at use.
	Username string `toml:"username,omitempty"`
	Password string `toml:"password,omitempty"`
	// TLS is the client TLS setup (nil: the endpoints' scheme decides,
	// with the system's roots for https).
	TLS *EtcdTLS `toml:"tls" json:",omitempty"`
	// DialTimeout bounds connecting to an endpoint.
	DialTimeout Duration `toml:"dial_timeout"`
}

// EtcdTLS is [cluster] etcd.tls.
type EtcdTLS struct {
	CAFile     string `toml:"ca_file,omitempty"`     // PEM roots; default the system's
	CertFile   string `toml:"cert_file,omitempty"`   // client certificate (with key_file)
	KeyFile    string `toml:"key_file,omitempty"`    // its key
	ServerName string `toml:"server_name,omitempty"` // expected in the servers' certificates
}

// cluster decodes the [cluster] table.
func (d *decoder) cluster(path []string, v any) *Cluster {
	m, ok := d.asTable(path, v)
	if !ok {
		return nil
	}
	c := &Cluster{}
	n0 := len(d.errs)
	d.fields(path, m, handlers{
		"etcd": func(p []string, v any) { d.etcd(p, v, &c.Etcd) },
		"name": func(p []string, v any) {
			s, ok := d.asPlainString(p, v)
			if ok && !validMemberName(s) {
				d.errAt(p, "invalid member name %q: use 1 to 253 letters, digits, '.', '-' and '_'", s)
				return
			}
			c.Name = s
		},
		"lease_ttl": func(p []string, v any) {
			x, ok := d.asDuration(p, v, true)
			switch {
			case !ok:
			case x.Duration%time.Second != 0:
				d.errAt(p, "want a whole number of seconds (etcd leases count seconds), got %s", x.Duration)
			case x.Duration < MinLeaseTTL:
				d.errAt(p, "must be at least %s, got %s", MinLeaseTTL, x.Duration)
			default:
				c.LeaseTTL = x
			}
		},
		"prefix": func(p []string, v any) {
			s, ok := d.asPlainString(p, v)
			if !ok {
				return
			}
			s = strings.TrimRight(s, "/")
			if !strings.HasPrefix(s, "/") || strings.ContainsAny(s, " \t\r\n\x00") {
				d.errAt(p, "invalid prefix: want an etcd key path such as \"/toolhostd\" (leading /, no spaces)")
				return
			}
			c.Prefix = s
		},
		"settle": func(p []string, v any) { c.Settle, _ = d.asDuration(p, v, false) },
		"advertise": func(p []string, v any) {
			s, ok := d.asRefString(p, v)
			if !ok || s == "" { // "": the default
				return
			}
			if !HasRefs(s) {
				if msg := CheckAdvertise(s); msg != "" {
					d.errAt(p, "%s", msg)
					return
				}
			}
			c.Advertise = s
		},
		"moves_per_second": func(p []string, v any) {
			var f float64
			switch n := v.(type) {
			case int64:
				f = float64(n)
			case float64:
				f = n
			default:
				d.errAt(p, "want a number, got %s", typeName(v))
				return
			}
			if !(f > 0) || f > 1e6 {
				d.errAt(p, "must be a positive number of moves per second, got %v", f)
				return
			}
			c.MovesPerSecond = f
		},
	})
	if _, set := m["settle"]; !set {
		c.Settle = Duration{DefaultSettle}
	}
	setDefaultDuration(&c.LeaseTTL, DefaultLeaseTTL)
	setDefault(&c.Prefix, DefaultClusterPrefix)
	if c.MovesPerSecond == 0 {
		c.MovesPerSecond = DefaultMovesPerSecond
	}
	setDefaultDuration(&c.Etcd.DialTimeout, DefaultDialTimeout)
	if c.Name == "" && !d.erred(child(path, "name"), n0) {
		h, err := os.Hostname()
		if err != nil || !validMemberName(h) {
			d.errAt(path, "set name: the hostname (%q) cannot name this member", h)
		}
		c.Name = h
	}
	if len(c.Etcd.Endpoints) == 0 && !d.erred(child(path, "etcd"), n0) {
		d.errAt(child(path, "etcd"), "set etcd.endpoints: the etcd client URLs, e.g. [\"http://etcd-0.etcd:2379\"]")
	}
	return c
}

// etcd decodes [cluster] etcd.
func (d *decoder) etcd(path []string, v any, e *Etcd) {
	m, ok := d.asTable(path, v)
	if !ok {
		return
	}
	d.fields(path, m, handlers{
		"endpoints": func(p []string, v any) {
			e.Endpoints, _ = d.asStrings(p, v, func(p []string, s string) bool {
				if msg := checkEndpoint(s); msg != "" {
					d.errAt(p, "%s", msg)
					return false
				}
				return true
			})
			if _, isArr := v.([]any); isArr && len(e.Endpoints) == 0 {
				d.errAt(p, "must not be empty")
			}
		},
		"username":     func(p []string, v any) { e.Username, _ = d.asRefString(p, v) },
		"password":     func(p []string, v any) { e.Password, _ = d.asRefString(p, v) },
		"dial_timeout": func(p []string, v any) { e.DialTimeout, _ = d.asDuration(p, v, true) },
		"tls": func(p []string, v any) {
			tm, ok := d.asTable(p, v)
			if !ok {
				return
			}
			t := &EtcdTLS{}
			file := func(dst *string) func(p []string, v any) {
				return func(p []string, v any) {
					s, _ := d.asPlainString(p, v)
					*dst = d.resolvePath(s)
				}
			}
			d.fields(p, tm, handlers{
				"ca_file":     file(&t.CAFile),
				"cert_file":   file(&t.CertFile),
				"key_file":    file(&t.KeyFile),
				"server_name": func(p []string, v any) { t.ServerName, _ = d.asPlainString(p, v) },
			})
			if (t.CertFile == "") != (t.KeyFile == "") {
				k := "key_file"
				if t.CertFile == "" {
					k = "cert_file"
				}
				d.errAt(child(p, k), "cert_file and key_file go together (a client certificate and its key)")
			}
			e.TLS = t
		},
	})
	if (e.Username == "") != (e.Password == "") {
		k := "password"
		if e.Username == "" {
			k = "username"
		}
		if _, set := m[k]; !set {
			d.errAt(child(path, k), "username and password go together")
		}
	}
}

// checkEndpoint validates an etcd client URL; it returns a message, ""
// when s is good.
func checkEndpoint(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "unix" && u.Scheme != "unixs") {
		return "invalid etcd endpoint " + quote(s) + ": want http://host:port, https://host:port or unix://path"
	}
	if u.Scheme == "http" || u.Scheme == "https" {
		if _, port, err := net.SplitHostPort(u.Host); err != nil || port == "" || (u.Path != "" && u.Path != "/") {
			return "invalid etcd endpoint " + quote(s) + ": want a host and a port, e.g. http://etcd-0.etcd:2379"
		}
	}
	return ""
}

// CheckAdvertise validates a [cluster] advertise URL (expanded); it
// returns a message, "" when s is good.
func CheckAdvertise(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "invalid advertise URL " + quote(s) + ": want http://host:port, the address other hosts reach this host's control API at"
	}
	if host, port, err := net.SplitHostPort(u.Host); err != nil || host == "" || port == "" {
		return "invalid advertise URL " + quote(s) + ": want a host and a port, e.g. http://10.0.0.5:7070"
	}
	if ip := net.ParseIP(strings.Trim(u.Hostname(), "[]")); ip != nil && ip.IsUnspecified() {
		return "invalid advertise URL " + quote(s) + ": a wildcard address cannot be reached; name this host's address"
	}
	return ""
}

// AdvertiseURL is the URL this host's control API is reached at by the
// other hosts: advertise expanded, else derived from controlListen when
// that names a host (not a wildcard address); "" when there is none.
func (c *Cluster) AdvertiseURL(controlListen string) (string, error) {
	if c.Advertise != "" {
		s, err := Expand(c.Advertise)
		if err != nil {
			return "", fmt.Errorf("cluster.advertise: %w", err)
		}
		if msg := CheckAdvertise(s); msg != "" {
			return "", errors.New("cluster.advertise: " + msg)
		}
		return strings.TrimSuffix(s, "/"), nil
	}
	host, _, err := net.SplitHostPort(controlListen)
	if err != nil || host == "" {
		return "", nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return "", nil
	}
	return "http://" + controlListen, nil
}

func quote(s string) string { return "\"" + strings.ReplaceAll(s, "\"", "\\\"") + "\"" }

// validMemberName reports whether s can name a cluster member: a hostname
// (letters, digits, '.', '-', '_'; 1 to 253 bytes).
func validMemberName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, c := range s {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
