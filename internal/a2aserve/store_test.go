package a2aserve

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

func TestStoreRetention(t *testing.T) {
	now := time.Unix(0, 0)
	s := newStore(time.Minute, 3, func() time.Time { return now })
	ctx := context.Background()
	task := func(id string, st a2a.TaskState) *a2a.Task {
		return &a2a.Task{ID: a2a.TaskID(id), ContextID: "c", Status: a2a.TaskStatus{State: st}}
	}
	for _, id := range []string{"a", "b"} {
		if _, err := s.Create(ctx, task(id, a2a.TaskStateSubmitted)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Create(ctx, task("a", a2a.TaskStateSubmitted)); !errors.Is(err, taskstore.ErrTaskAlreadyExists) {
		t.Fatalf("second create: %v", err)
	}
	v, err := s.Update(ctx, &taskstore.UpdateRequest{Task: task("a", a2a.TaskStateCompleted), PrevVersion: 1})
	if err != nil || v != 2 {
		t.Fatalf("update: %v %v", v, err)
	}
	if _, err := s.Update(ctx, &taskstore.UpdateRequest{Task: task("a", a2a.TaskStateFailed), PrevVersion: 1}); !errors.Is(err, taskstore.ErrConcurrentModification) {
		t.Fatalf("stale update: %v", err)
	}
	now = now.Add(2 * time.Minute)
	if _, err := s.Get(ctx, "a"); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("an ended task past the retention: %v", err)
	}
	if got, err := s.Get(ctx, "b"); err != nil || got.Task.Status.State != a2a.TaskStateSubmitted {
		t.Fatalf("an open task is kept however old: %+v %v", got, err)
	}
	// Past max, the oldest ended go first; open ones stay.
	for i, id := range []string{"c", "d", "e"} {
		now = now.Add(time.Second)
		if _, err := s.Create(ctx, task(id, a2a.TaskStateCompleted)); err != nil {
			t.Fatal(i, err)
		}
	}
	list, err := s.List(ctx, &a2a.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []a2a.TaskID
	for _, tk := range list.Tasks {
		ids = append(ids, tk.ID)
	}
	if len(ids) != 3 || ids[0] != "e" || ids[1] != "d" || ids[2] != "b" {
		t.Fatalf("kept %v, want [e d b]", ids)
	}
	if _, err := s.List(ctx, &a2a.ListTasksRequest{Status: "TASK_STATE_BOGUS"}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Fatalf("unknown state filter: %v", err)
	}
}
