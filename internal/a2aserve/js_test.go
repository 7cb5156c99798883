package a2aserve_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

type jsTask struct{ ID, ContextID, State, Reply, Status string }

// TestJSClient drives the official JavaScript A2A SDK's client
// (testdata/client.mjs) against the endpoint, speaking A2A 1.0 and, with
// its compat layer, 0.3.
func TestJSClient(t *testing.T) {
	node := testenv.Node(t, "@a2a-js/sdk")
	f := serve(t, "tok")
	for _, mode := range []string{"1.0", "legacy"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), node, filepath.Join("testdata", "client.mjs"), f.url+"/talk", f.token, mode)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("node: %v\n%s", err, stderr.String())
			}
			var got struct {
				Card struct {
					Name, Description string
					Streaming         bool
				}
				Send, Get, Fail, Cancel jsTask
				Stream                  []string
				List                    []string
				UnknownTask, BadFilter  string
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if got.Card.Name != "talk" || got.Card.Description != "talks back" || !got.Card.Streaming {
				t.Errorf("card %+v", got.Card)
			}
			if got.Send.State != "TASK_STATE_COMPLETED" || got.Send.Reply != "a b ." || got.Send.ContextID != "js1" {
				t.Errorf("send %+v", got.Send)
			}
			want := "task:TASK_STATE_SUBMITTED status:TASK_STATE_WORKING artifact:x  artifact:y  artifact:. status:TASK_STATE_COMPLETED"
			if s := strings.Join(got.Stream, " "); s != want {
				t.Errorf("stream\n got %s\nwant %s", s, want)
			}
			if got.Get != got.Send {
				t.Errorf("get %+v, sent %+v", got.Get, got.Send)
			}
			if mode != "legacy" && (len(got.List) != 1 || got.List[0] != got.Send.ID) {
				t.Errorf("list of js1 %v, want [%s]", got.List, got.Send.ID)
			}
			if mode != "legacy" && got.BadFilter != "INVALID_PARAMS -32602" {
				t.Errorf("a list filtered by an unknown state: %s", got.BadFilter)
			}
			if got.Fail.State != "TASK_STATE_FAILED" || got.Fail.Status != "cannot do that" {
				t.Errorf("reply-error %+v", got.Fail)
			}
			if got.Cancel.State != "TASK_STATE_CANCELED" {
				t.Errorf("cancel %+v", got.Cancel)
			}
			if !strings.Contains(got.UnknownTask, "TaskNotFound") {
				t.Errorf("unknown task: %s", got.UnknownTask)
			}
		})
	}
}
