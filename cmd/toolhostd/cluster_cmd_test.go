package main

import (
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/control"
)

// TestClusterTable: `ps --cluster` lists every agent with its host (an
// agent whose key is held but not published yet as "claimed") and every
// per-session instance with its host, flags agents and members on another
// config, and shows each member's address.
func TestClusterTable(t *testing.T) {
	st := control.ClusterStatus{
		Name: "a", Digest: "aaaaaaaaaaaaaaaa",
		Members: []control.ClusterMember{
			{Name: "a", Digest: "aaaaaaaaaaaaaaaa", SameConfig: true, Settled: true, Agents: map[string]string{"x": "running"},
				Address: "http://10.0.0.1:7070", Sessions: map[string]map[string]string{"x": {"s2": "working", "s1": "idle"}}},
			{Name: "b", Digest: "bbbbbbbbbbbbbbbb", Settled: true, Agents: map[string]string{"y": "backoff"},
				Sessions: map[string]map[string]string{"x": {"s3": "idle"}}},
		},
		Owners: map[string]string{"x": "a", "y": "b", "z": "a"},
	}
	rows := clusterRows(st)
	want := []clusterRow{
		{Agent: "x", Host: "a", State: "running", Config: "same"},
		{Agent: "x", Session: "s1", Host: "a", State: "idle", Config: "same"},
		{Agent: "x", Session: "s2", Host: "a", State: "working", Config: "same"},
		{Agent: "x", Session: "s3", Host: "b", State: "idle", Config: "OTHER"},
		{Agent: "y", Host: "b", State: "backoff", Config: "OTHER"},
		{Agent: "z", Host: "a", State: "claimed", Config: "same"},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows %+v, want %+v", rows, want)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, rows[i], want[i])
		}
	}
	var b strings.Builder
	if err := clusterTable(&b, st); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"a (this host)  1       true     http://10.0.0.1:7070  same", "b              1       true     -                     OTHER (bbbbbbbbbbbb, this host aaaaaaaaaaaa)",
		"x      s2       a     working  same", "y      -        b     backoff  OTHER"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, b.String())
		}
	}
}
