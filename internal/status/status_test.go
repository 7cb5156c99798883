package status

import (
	"encoding/json"
	"testing"
	"time"
)

// clusterGolden is the encoded form of the Cluster that TestClusterJSON
// builds: /v1/cluster and `toolhostd status` read these names, flat.
const clusterGolden = `{"name":"a","joined":true,"fencing":false,"lease":7,` +
	`"last_renew":"2024-05-01T12:00:00Z","config_digest":"d1",` +
	`"members":[{"name":"a","config_digest":"d1","same_config":true,"settled":true,"agents":{"x":"running"},` +
	`"address":"http://10.0.0.1:7070","sessions":{"x":{"s1":"idle"}}}],` +
	`"owners":{"x":"a"},"owned":["x"],"claims":1,"moves":2,"fences":3,"lost":4,"etcd_requests":5}`

// TestClusterJSON: a Cluster encodes to the same flat object its fields
// always had (the counters are not nested), and decodes back.
func TestClusterJSON(t *testing.T) {
	var c Cluster
	c.Name, c.Joined, c.Lease, c.Digest = "a", true, 7, "d1"
	c.LastRenew = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	c.Members = []Member{{Name: "a", Digest: "d1", SameConfig: true, Settled: true,
		Agents: map[string]string{"x": "running"}, Address: "http://10.0.0.1:7070",
		Sessions: map[string]map[string]string{"x": {"s1": "idle"}}}}
	c.Owners, c.Owned = map[string]string{"x": "a"}, []string{"x"}
	c.Claims, c.Moves, c.Fences, c.Lost, c.Requests = 1, 2, 3, 4, 5
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != clusterGolden {
		t.Fatalf("encoded\n%s\nwant\n%s", b, clusterGolden)
	}
	var back Cluster
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if again, _ := json.Marshal(back); string(again) != clusterGolden {
		t.Fatalf("decoded and encoded again\n%s\nwant\n%s", again, clusterGolden)
	}
}
