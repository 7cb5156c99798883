package config

import "testing"

// TestAdvertiseURL: the address a cluster host publishes for forwarded
// messages: advertise expanded and checked, else control_listen unless it
// is a wildcard address.
func TestAdvertiseURL(t *testing.T) {
	t.Setenv("TEST_POD_IP", "10.1.2.3")
	for _, tc := range []struct {
		advertise, listen, want string
		err                     bool
	}{
		{"", "", "", false},
		{"", "10.0.0.5:7070", "http://10.0.0.5:7070", false},
		{"", "host-a.internal:7070", "http://host-a.internal:7070", false},
		{"", "0.0.0.0:7070", "", false},
		{"", "[::]:7070", "", false},
		{"", ":7070", "", false},
		{"https://h.example:7000/", "0.0.0.0:7070", "https://h.example:7000", false},
		{"http://${env:TEST_POD_IP}:7070", "0.0.0.0:7070", "http://10.1.2.3:7070", false},
		{"http://${env:TEST_NO_SUCH_VAR_I33}:7070", "", "", true},
		{"http://0.0.0.0:7070", "", "", true},
		{"ftp://h:1", "", "", true},
		{"http://h", "", "", true},
		{"http://h:1/api", "", "", true},
	} {
		c := &Cluster{Advertise: tc.advertise}
		got, err := c.AdvertiseURL(tc.listen)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("advertise %q, listen %q: %q, %v; want %q, error %v", tc.advertise, tc.listen, got, err, tc.want, tc.err)
		}
	}
}

// TestClusterPrefixes: the key-value store's keys are under the cluster's
// prefix, the durable agents' oplogs beside it (not under it: every member
// watches all that is under it).
func TestClusterPrefixes(t *testing.T) {
	for _, tc := range []struct {
		prefix, kv, oplog string
	}{
		{"", "/toolhostd/kv", "/toolhostd-oplog"},
		{"/prod", "/prod/kv", "/prod-oplog"},
		{"/prod/", "/prod/kv", "/prod-oplog"},
	} {
		c := &Config{Cluster: &Cluster{Prefix: tc.prefix}}
		if got := c.StorePrefix(); got != tc.kv {
			t.Errorf("prefix %q: StorePrefix %q, want %q", tc.prefix, got, tc.kv)
		}
		if got := c.OplogPrefix(); got != tc.oplog {
			t.Errorf("prefix %q: OplogPrefix %q, want %q", tc.prefix, got, tc.oplog)
		}
	}
	if got := (&Config{}).OplogPrefix(); got != "/toolhostd-oplog" {
		t.Errorf("no [cluster]: OplogPrefix %q", got)
	}
}
