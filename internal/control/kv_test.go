package control_test

import (
	"bytes"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/control/controltest"
	"github.com/toolhostd/toolhostd/internal/kv"
)

// kvServer serves the API over a real bbolt store whose key pages hold 3
// keys (so listings run several pages), with agent "known" configured and
// listed, and "remote" configured but run by another host.
func kvServer(t *testing.T) (*control.Server, *kv.Service) {
	t.Helper()
	st, err := kv.OpenBolt(filepath.Join(t.TempDir(), "kv.db"), kv.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := kv.New(st, kv.Options{PageSize: 3})
	be := controltest.NewBackend()
	be.AddAgent(control.AgentStatus{Name: "known", State: "running"})
	be.AddElsewhere("remote")
	return controltest.Serve(t, control.Options{Backend: be, KV: svc}), svc
}

// TestKVRoutes: the answers of /v1/kv's routes, errors in the API's JSON
// shape with their statuses.
func TestKVRoutes(t *testing.T) {
	srv, svc := kvServer(t)
	ctx := t.Context()
	if err := svc.Put(ctx, kv.Ref{Agent: "a", Bucket: "notes"}, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	hc := unixHTTP(srv.Socket())
	const base = "http://toolhostd"
	tests := []struct {
		method, path string
		status       int
		body         string // the whole body of a success, a substring of an error
	}{
		{"GET", "/v1/kv", 200, `{"agents":["a"]}` + "\n"},
		{"GET", "/v1/kv/a", 200, `{"buckets":["notes"]}` + "\n"},
		{"GET", "/v1/kv/known", 200, `{"buckets":[]}` + "\n"},
		{"GET", "/v1/kv/remote", 200, `{"buckets":[]}` + "\n"},
		{"GET", "/v1/kv/nobody", 404, `no such agent: "nobody" keeps no keys`},
		{"GET", "/v1/kv/a/notes", 200, `{"keys":["k"]}` + "\n"},
		{"GET", "/v1/kv/a/notes?prefix=x", 200, `{"keys":[]}` + "\n"},
		{"GET", "/v1/kv/a/notes?limit=0", 400, "limit"},
		{"GET", "/v1/kv/a/notes/k", 200, "v"},
		{"HEAD", "/v1/kv/a/notes/k", 200, ""},
		{"GET", "/v1/kv/a/notes/none", 404, `no such key: "none" in bucket a/notes`},
		{"GET", "/v1/kv/a/other/k", 404, "no such key"},
		{"GET", "/v1/kv/a/notes/" + strings.Repeat("x", kv.MaxKeyBytes+1), 400, "the limit is 4096"},
		{"POST", "/v1/kv/a/notes/k", 405, "use GET, PUT or DELETE"},
		{"POST", "/v1/kv/a", 405, "use GET"},
		{"GET", "/v1/kv/import", 405, "use POST"},
		{"GET", "/v1/kv/export?bucket=notes", 400, "?bucket= needs ?agent="},
		{"GET", "/v1/kv/export?agent=a", 200, `{"agent":"a","bucket":"notes","key":"k","value":"dg=="}` + "\n"},
	}
	for _, tc := range tests {
		a := request(t, hc, tc.method, base+tc.path, "")
		if a.status != tc.status {
			t.Errorf("%s %s: status %d (%s), want %d", tc.method, tc.path, a.status, a.body, tc.status)
			continue
		}
		if tc.status >= 400 {
			if msg := errorOf(t, a); !strings.Contains(msg, tc.body) {
				t.Errorf("%s %s: error %q, want it to say %q", tc.method, tc.path, msg, tc.body)
			}
		} else if string(a.body) != tc.body {
			t.Errorf("%s %s: body %q, want %q", tc.method, tc.path, a.body, tc.body)
		}
	}

	// Without a store, every route says so.
	bare := controltest.Serve(t, control.Options{Backend: controltest.NewBackend()})
	if a := request(t, unixHTTP(bare.Socket()), "GET", base+"/v1/kv/a/notes/k", ""); a.status != 404 || !strings.Contains(errorOf(t, a), "not served here") {
		t.Errorf("without a store: %d %s", a.status, a.body)
	}
}

// TestKVClient: the client's methods round-trip keys and bucket names a
// path would mangle (a /, dots, escapes), page through keys, and map a
// missing key and an unknown agent to their sentinels.
func TestKVClient(t *testing.T) {
	srv, _ := kvServer(t)
	c, err := control.Dial(srv.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	keys := []string{".", "..", "a/b", "a//b", "%2F", "?x=1#y", "sp ace", "ünï"}
	for i, k := range keys {
		if err := c.KVPut(ctx, "agent", "session/s1", k, []byte{byte(i)}); err != nil {
			t.Fatalf("put %q: %v", k, err)
		}
	}
	for i, k := range keys {
		v, err := c.KVGet(ctx, "agent", "session/s1", k)
		if err != nil || !bytes.Equal(v, []byte{byte(i)}) {
			t.Errorf("get %q: %v %v", k, v, err)
		}
	}
	var listed []string
	pages := 0
	for cursor := ""; ; {
		page, next, err := c.KVKeys(ctx, "agent", "session/s1", "", cursor)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		listed = append(listed, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	want := slices.Clone(keys)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("listed %q, want the keys put in bytewise order %q", listed, want)
	}
	if wantPages := (len(keys) + 2) / 3; pages != wantPages {
		t.Errorf("listed in %d pages, want %d of 3 keys", pages, wantPages)
	}
	if b, err := c.KVBuckets(ctx, "agent"); err != nil || len(b) != 1 || b[0] != "session/s1" {
		t.Errorf("buckets %q %v", b, err)
	}
	if err := c.KVRemove(ctx, "agent", "session/s1", "a/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.KVGet(ctx, "agent", "session/s1", "a/b"); !errors.Is(err, control.ErrNoSuchKey) {
		t.Errorf("get of a removed key: %v, want ErrNoSuchKey", err)
	}
	if _, err := c.KVBuckets(ctx, "nobody"); !errors.Is(err, control.ErrUnknownAgent) {
		t.Errorf("buckets of an unknown agent: %v, want ErrUnknownAgent", err)
	}
	var export bytes.Buffer
	if err := c.KVExport(ctx, &export, "agent", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.KVRemove(ctx, "agent", "session/s1", "."); err != nil {
		t.Fatal(err)
	}
	if n, err := c.KVImport(ctx, &export); err != nil || n != len(keys)-1 {
		t.Errorf("import: %d %v, want %d", n, err, len(keys)-1)
	}
	if v, err := c.KVGet(ctx, "agent", "session/s1", "."); err != nil || !bytes.Equal(v, []byte{0}) {
		t.Errorf("the imported key: %v %v", v, err)
	}
	var ae *control.APIError
	if _, err := c.KVImport(ctx, strings.NewReader("{}\n")); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, "import line 1") {
		t.Errorf("import of a record without agent and bucket: %v, want a 400 naming line 1", err)
	}
}

// TestKVImportStatus: an import's error names its line with the status of
// its cause: 400 only for a line that is not a record of an export, 413
// for a line past the limit, 500 when the store fails (the lines before
// the failing one are written).
func TestKVImportStatus(t *testing.T) {
	st, err := kv.OpenBolt(filepath.Join(t.TempDir(), "kv.db"), kv.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := controltest.Serve(t, control.Options{Backend: controltest.NewBackend(), KV: kv.New(st, kv.Options{})})
	c, err := control.Dial(srv.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	good := `{"agent":"a","bucket":"notes","key":"k","value":"dg=="}` + "\n"
	tests := []struct {
		name, body string
		status     int
		says       []string
	}{
		{"not json", good + "not json\n", 400, []string{"import line 2", "not a record", "1 keys written before it"}},
		{"no key", `{"agent":"a","bucket":"notes","value":"dg=="}` + "\n", 400, []string{"import line 1", "empty key"}},
		{"line too long", good + good + strings.Repeat("x", 64<<20) + "\n", 413, []string{"import line 3", "too long", "2 keys written before it"}},
	}
	for _, tc := range tests {
		var ae *control.APIError
		if _, err := c.KVImport(t.Context(), strings.NewReader(tc.body)); !errors.As(err, &ae) || ae.Status != tc.status {
			t.Errorf("%s: %v, want status %d", tc.name, err, tc.status)
			continue
		}
		for _, w := range tc.says {
			if !strings.Contains(ae.Message, w) {
				t.Errorf("%s: error %q, want it to say %q", tc.name, ae.Message, w)
			}
		}
	}

	// A store that fails is the server's fault, not the input's.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	var ae *control.APIError
	if _, err := c.KVImport(t.Context(), strings.NewReader(good)); !errors.As(err, &ae) || ae.Status != 500 || !strings.Contains(ae.Message, "import line 1") {
		t.Errorf("import into a closed store: %v, want a 500 naming line 1", err)
	}
}
