package a2aserve

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

// store keeps an agent's tasks: every open one, and the ended ones for
// the retention window (the messages' retention), fewer when there are
// more than max (the oldest ended first). It sweeps when used; it has no
// goroutine. Every caller is the one principal the endpoint's token
// admits, so it does not partition by user.
type store struct {
	retention time.Duration
	max       int
	now       func() time.Time

	mu    sync.Mutex
	tasks map[a2a.TaskID]*stored
}

type stored struct {
	task    []byte // JSON: a copy no caller shares
	state   a2a.TaskState
	context string
	status  *time.Time
	version taskstore.TaskVersion
	updated time.Time
}

var _ taskstore.Store = (*store)(nil)

func newStore(retention time.Duration, max int, now func() time.Time) *store {
	return &store{retention: retention, max: max, now: now, tasks: map[a2a.TaskID]*stored{}}
}

func encode(t *a2a.Task, version taskstore.TaskVersion, now time.Time) (*stored, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", t.ID, err)
	}
	return &stored{task: b, state: t.Status.State, context: t.ContextID, status: t.Status.Timestamp,
		version: version, updated: now}, nil
}

func (s *stored) decode() (*a2a.Task, error) {
	var t a2a.Task
	if err := json.Unmarshal(s.task, &t); err != nil {
		return nil, fmt.Errorf("stored task: %w", err)
	}
	return &t, nil
}

// Create implements taskstore.Store.
func (s *store) Create(_ context.Context, t *a2a.Task) (taskstore.TaskVersion, error) {
	st, err := encode(t, 1, s.now())
	if err != nil {
		return taskstore.TaskVersionMissing, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked()
	if _, ok := s.tasks[t.ID]; ok {
		return taskstore.TaskVersionMissing, taskstore.ErrTaskAlreadyExists
	}
	s.tasks[t.ID] = st
	return st.version, nil
}

// Update implements taskstore.Store.
func (s *store) Update(_ context.Context, req *taskstore.UpdateRequest) (taskstore.TaskVersion, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.tasks[req.Task.ID]
	if !ok {
		return taskstore.TaskVersionMissing, a2a.ErrTaskNotFound
	}
	if req.PrevVersion != taskstore.TaskVersionMissing && old.version != req.PrevVersion {
		return taskstore.TaskVersionMissing, taskstore.ErrConcurrentModification
	}
	st, err := encode(req.Task, old.version+1, s.now())
	if err != nil {
		return taskstore.TaskVersionMissing, err
	}
	s.tasks[req.Task.ID] = st
	return st.version, nil
}

// Get implements taskstore.Store.
func (s *store) Get(_ context.Context, id a2a.TaskID) (*taskstore.StoredTask, error) {
	s.mu.Lock()
	s.sweepLocked()
	st, ok := s.tasks[id]
	s.mu.Unlock()
	if !ok {
		return nil, a2a.ErrTaskNotFound
	}
	t, err := st.decode()
	if err != nil {
		return nil, err
	}
	return &taskstore.StoredTask{Task: t, Version: st.version}, nil
}

const (
	defaultPageSize = 50
	maxPageSize     = 100
	maxHistory      = 100
)

// List implements taskstore.Store: newest update first, filtered and
// paged as a2a.ListTasksRequest says.
func (s *store) List(_ context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	size := req.PageSize
	switch {
	case size == 0:
		size = defaultPageSize
	case size < 1 || size > maxPageSize:
		return nil, fmt.Errorf("page size must be 1 to %d, got %d: %w", maxPageSize, size, a2a.ErrInvalidRequest)
	}
	if !knownState(req.Status) {
		return nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("no task state %q", req.Status))
	}
	type row struct {
		id a2a.TaskID
		st *stored
	}
	s.mu.Lock()
	s.sweepLocked()
	var rows []row
	for id, st := range s.tasks {
		if req.ContextID != "" && st.context != req.ContextID ||
			req.Status != a2a.TaskStateUnspecified && req.Status != "TASK_STATE_UNSPECIFIED" && st.state != req.Status ||
			req.StatusTimestampAfter != nil && st.status != nil && st.status.Before(*req.StatusTimestampAfter) {
			continue
		}
		rows = append(rows, row{id, st})
	}
	s.mu.Unlock()
	slices.SortFunc(rows, func(a, b row) int {
		if c := b.st.updated.Compare(a.st.updated); c != 0 {
			return c
		}
		return strings.Compare(string(b.id), string(a.id))
	})
	total := len(rows)
	if req.PageToken != "" {
		b, err := base64.URLEncoding.DecodeString(req.PageToken)
		if err != nil {
			return nil, fmt.Errorf("page token: %w", a2a.ErrInvalidParams)
		}
		after := a2a.TaskID(b)
		i := slices.IndexFunc(rows, func(r row) bool { return r.id == after })
		if i < 0 {
			return nil, fmt.Errorf("page token: no such task (ended and forgotten?): %w", a2a.ErrInvalidParams)
		}
		rows = rows[i+1:]
	}
	resp := &a2a.ListTasksResponse{TotalSize: total, PageSize: size, Tasks: []*a2a.Task{}}
	if len(rows) > size {
		rows = rows[:size]
		resp.NextPageToken = base64.URLEncoding.EncodeToString([]byte(rows[size-1].id))
	}
	history := maxHistory
	if req.HistoryLength != nil {
		history = *req.HistoryLength
	}
	for _, r := range rows {
		t, err := r.st.decode()
		if err != nil {
			return nil, err
		}
		if history >= 0 && len(t.History) > history {
			t.History = t.History[len(t.History)-history:]
		}
		if !req.IncludeArtifacts {
			t.Artifacts = nil
		}
		resp.Tasks = append(resp.Tasks, t)
	}
	return resp, nil
}

// sweepLocked forgets ended tasks past the retention, then the oldest
// ended ones while there are more than max.
func (s *store) sweepLocked() {
	cutoff := s.now().Add(-s.retention)
	var ended []a2a.TaskID
	for id, st := range s.tasks {
		if !st.state.Terminal() {
			continue
		}
		if st.updated.Before(cutoff) {
			delete(s.tasks, id)
			continue
		}
		ended = append(ended, id)
	}
	if len(s.tasks) <= s.max {
		return
	}
	slices.SortFunc(ended, func(a, b a2a.TaskID) int { return s.tasks[a].updated.Compare(s.tasks[b].updated) })
	for _, id := range ended {
		if len(s.tasks) <= s.max {
			return
		}
		delete(s.tasks, id)
	}
}

// knownState reports a state a task can be in, or none (no filter);
// TASK_STATE_UNSPECIFIED is none too.
func knownState(st a2a.TaskState) bool {
	switch st {
	case a2a.TaskStateUnspecified, "TASK_STATE_UNSPECIFIED", a2a.TaskStateAuthRequired, a2a.TaskStateCanceled,
		a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateInputRequired, a2a.TaskStateRejected,
		a2a.TaskStateSubmitted, a2a.TaskStateWorking:
		return true
	}
	return false
}
