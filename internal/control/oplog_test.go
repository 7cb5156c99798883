package control_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/control/controltest"
	"github.com/toolhostd/toolhostd/internal/status"
)

// oplogBackend is a controltest.Backend that keeps oplogs, by key. Its
// Oplog always gives the entries' data: the server drops it without
// ?content=1. Agent "busy" is unavailable, "broken" fails.
type oplogBackend struct {
	*controltest.Backend
	logs map[string]control.Oplog
}

func (b *oplogBackend) Oplog(agent, session string, _ bool) (control.Oplog, error) {
	switch {
	case agent == "busy":
		return control.Oplog{}, fmt.Errorf("the daemon is shutting down: %w", control.ErrUnavailable)
	case agent == "broken":
		return control.Oplog{}, errors.New(`oplog: /state/oplog.db: log "broken" is corrupt at entry 3: checksum mismatch`)
	case !b.Configured(agent):
		return control.Oplog{}, control.ErrUnknownAgent
	}
	key := agent
	if session != "" {
		key += "/" + session
	}
	l, ok := b.logs[key]
	if !ok {
		return control.Oplog{}, fmt.Errorf("%w of %q: the agent is not durable", control.ErrNoOplog, key)
	}
	l.Entries = slices.Clone(l.Entries)
	return l, nil
}

var oplogStarted = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newOplogBackend() *oplogBackend {
	be := &oplogBackend{Backend: controltest.NewBackend(), logs: map[string]control.Oplog{
		"loop": {Key: "loop", Component: "9f86d081884c7d65", Started: oplogStarted, Entries: []control.OplogEntry{
			{Seq: 1, Kind: "result", Call: "wasi:clocks/wall-clock@0.2.0#now", Bytes: 12, At: oplogStarted.Add(time.Millisecond), Data: []byte("\x00\x01now")},
			{Seq: 2, Kind: "result", Call: "toolhost:agent/tooling@0.3.0#[method]tooling.call-tool-blocking", Bytes: 5, At: oplogStarted.Add(12 * time.Millisecond), Data: []byte("hello")},
		}},
		"talk/alice": {Key: "talk/alice", Component: "abcd", Started: oplogStarted},
	}}
	be.AddAgent(control.AgentStatus{Name: "loop", State: "running", Oplog: &status.Oplog{Entries: 2, Bytes: 40}})
	be.AddAgent(control.AgentStatus{Name: "talk", State: "running", Oplog: &status.Oplog{Entries: 0, Bytes: 0, Logs: 1}})
	be.AddAgent(control.AgentStatus{Name: "busy", State: "running"})
	be.AddAgent(control.AgentStatus{Name: "broken", State: "failed"})
	return be
}

// TestOplogRoute: GET /v1/agents/{name}/oplog with ?session= and
// ?content=, its errors, and the oplog of the agents' statuses.
func TestOplogRoute(t *testing.T) {
	srv := controltest.Serve(t, control.Options{Backend: newOplogBackend()})
	hc := unixHTTP(srv.Socket())
	const base = "http://toolhostd"

	decode := func(t *testing.T, body []byte) control.Oplog {
		t.Helper()
		var l control.Oplog
		if err := json.Unmarshal(body, &l); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		return l
	}
	tests := []struct {
		method, path string
		status       int
		errHas       string
		check        func(t *testing.T, body []byte)
	}{
		{method: "GET", path: "/v1/agents/loop/oplog", status: 200, check: func(t *testing.T, body []byte) {
			l := decode(t, body)
			if l.Key != "loop" || l.Component != "9f86d081884c7d65" || !l.Started.Equal(oplogStarted) || len(l.Entries) != 2 {
				t.Fatalf("oplog %+v", l)
			}
			if e := l.Entries[1]; e.Seq != 2 || e.Kind != "result" || e.Bytes != 5 || !strings.HasSuffix(e.Call, "call-tool-blocking") ||
				!e.At.Equal(oplogStarted.Add(12*time.Millisecond)) {
				t.Errorf("entry 2 %+v", e)
			}
			if bytes.Contains(body, []byte(`"data"`)) {
				t.Errorf("data without ?content=1: %s", body)
			}
			for _, key := range []string{`"key":"loop"`, `"component":`, `"started":"2026-03-01T12:00:00Z"`, `"seq":1`, `"kind":"result"`, `"call":"wasi:clocks`, `"bytes":12`, `"at":`} {
				if !bytes.Contains(body, []byte(key)) {
					t.Errorf("body lacks %s: %s", key, body)
				}
			}
		}},
		{method: "GET", path: "/v1/agents/loop/oplog?content=1", status: 200, check: func(t *testing.T, body []byte) {
			l := decode(t, body)
			if len(l.Entries) != 2 || string(l.Entries[1].Data) != "hello" || string(l.Entries[0].Data) != "\x00\x01now" {
				t.Errorf("entries with content %+v", l.Entries)
			}
			if !bytes.Contains(body, []byte(`"data":"aGVsbG8="`)) {
				t.Errorf("data is not base64: %s", body)
			}
		}},
		{method: "GET", path: "/v1/agents/loop/oplog?content=0", status: 200, check: func(t *testing.T, body []byte) {
			if bytes.Contains(body, []byte(`"data"`)) {
				t.Errorf("data with content=0: %s", body)
			}
		}},
		{method: "HEAD", path: "/v1/agents/loop/oplog", status: 200},
		{method: "GET", path: "/v1/agents/talk/oplog?session=alice", status: 200, check: func(t *testing.T, body []byte) {
			if l := decode(t, body); l.Key != "talk/alice" || l.Entries == nil || len(l.Entries) != 0 {
				t.Errorf("oplog %+v", l)
			}
			if !bytes.Contains(body, []byte(`"entries":[]`)) {
				t.Errorf("an empty log's entries are not []: %s", body)
			}
		}},
		{method: "GET", path: "/v1/agents/talk/oplog?session=bob", status: 404, errHas: `no oplog of "talk/bob": the agent is not durable`},
		{method: "GET", path: "/v1/agents/a/oplog", status: 404, errHas: `no oplog of "a"`},
		{method: "GET", path: "/v1/agents/nope/oplog", status: 404, errHas: `no such agent: "nope"`},
		{method: "GET", path: "/v1/agents/loop/oplog?content=lots", status: 400, errHas: `content="lots"`},
		{method: "GET", path: "/v1/agents/busy/oplog", status: 503, errHas: "shutting down"},
		{method: "GET", path: "/v1/agents/broken/oplog", status: 500, errHas: "corrupt at entry 3"},
		{method: "POST", path: "/v1/agents/loop/oplog", status: 405, errHas: "use GET"},
		{method: "GET", path: "/v1/agents", status: 200, check: func(t *testing.T, body []byte) {
			for _, key := range []string{`"oplog":{"entries":2,"bytes":40}`, `"oplog":{"entries":0,"bytes":0,"logs":1}`} {
				if !bytes.Contains(body, []byte(key)) {
					t.Errorf("body lacks %s: %s", key, body)
				}
			}
			if n := bytes.Count(body, []byte(`"oplog"`)); n != 2 {
				t.Errorf(`%d agents with "oplog", want the 2 durable ones: %s`, n, body)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			a := request(t, hc, tt.method, base+tt.path, "")
			if a.status != tt.status {
				t.Fatalf("status %d, want %d; body %s", a.status, tt.status, a.body)
			}
			if tt.errHas != "" {
				if msg := errorOf(t, a); !strings.Contains(msg, tt.errHas) {
					t.Errorf("error %q, want it to contain %q", msg, tt.errHas)
				}
			}
			if tt.check != nil {
				tt.check(t, a.body)
			}
		})
	}
}

// TestOplogNotKept: a Backend that is no OplogBackend answers 404 with
// the usual error body.
func TestOplogNotKept(t *testing.T) {
	srv := controltest.Serve(t, control.Options{Backend: controltest.NewBackend()})
	a := request(t, unixHTTP(srv.Socket()), "GET", "http://toolhostd/v1/agents/a/oplog", "")
	if a.status != 404 {
		t.Fatalf("status %d; body %s", a.status, a.body)
	}
	if msg := errorOf(t, a); !strings.Contains(msg, "no oplog") {
		t.Errorf("error %q", msg)
	}
}

// TestOplogClient: Client.Oplog, and its errors: ErrUnknownAgent for an
// agent the daemon lacks, ErrNoOplog for one without an oplog.
func TestOplogClient(t *testing.T) {
	srv := controltest.Serve(t, control.Options{Backend: newOplogBackend()})
	c, err := control.Dial(srv.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	l, err := c.Oplog(ctx, "loop", "", false)
	if err != nil || l.Key != "loop" || len(l.Entries) != 2 || l.Entries[0].Data != nil {
		t.Errorf("Oplog(loop) = %+v, %v", l, err)
	}
	l, err = c.Oplog(ctx, "loop", "", true)
	if err != nil || len(l.Entries) != 2 || string(l.Entries[1].Data) != "hello" {
		t.Errorf("Oplog(loop, content) = %+v, %v", l, err)
	}
	if l, err := c.Oplog(ctx, "talk", "alice", false); err != nil || l.Key != "talk/alice" {
		t.Errorf("Oplog(talk/alice) = %+v, %v", l, err)
	}
	_, err = c.Oplog(ctx, "zz", "", false)
	if !errors.Is(err, control.ErrUnknownAgent) || errors.Is(err, control.ErrNoOplog) || err.Error() != `no such agent: "zz"` {
		t.Errorf("Oplog(zz) err = %v", err)
	}
	_, err = c.Oplog(ctx, "a", "", false)
	var ae *control.APIError
	if !errors.Is(err, control.ErrNoOplog) || errors.Is(err, control.ErrUnknownAgent) || !errors.As(err, &ae) || ae.Status != 404 {
		t.Errorf("Oplog(a) err = %v", err)
	}
	if _, err := c.Oplog(ctx, "busy", "", false); !errors.As(err, &ae) || ae.Status != 503 {
		t.Errorf("Oplog(busy) err = %v", err)
	}
	agents, err := c.Agents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range agents {
		if want := a.Name == "loop" || a.Name == "talk"; (a.Oplog != nil) != want {
			t.Errorf("agent %s: oplog %+v", a.Name, a.Oplog)
		}
	}
}
