package control

// The endpoints on the daemon's state: agents (list, one, start/stop/
// restart), toolings, the cluster view and reload.

import (
	"errors"
	"fmt"
	"net/http"

	"go.uber.org/zap"
)

// AgentList is the body of GET /v1/agents.
type AgentList struct {
	Agents []AgentStatus `json:"agents"`
}

// ToolingList is the body of GET /v1/toolings.
type ToolingList struct {
	Toolings []ToolingStatus `json:"toolings"`
}

func (s *Server) listAgents(w http.ResponseWriter, _ *http.Request) {
	list := s.opts.Backend.Agents()
	if list == nil {
		list = []AgentStatus{}
	}
	for i := range list {
		list[i] = capAgent(list[i])
	}
	writeJSON(w, http.StatusOK, AgentList{Agents: list})
}

func (s *Server) findAgent(name string) (AgentStatus, bool) {
	for _, a := range s.opts.Backend.Agents() {
		if a.Name == name {
			return capAgent(a), true
		}
	}
	return AgentStatus{}, false
}

func (s *Server) getAgent(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	a, ok := s.findAgent(name)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("%v: %q", ErrUnknownAgent, name))
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// agentAction is POST /v1/agents/{name}/start|stop|restart; it answers
// with the agent's status after the action.
func (s *Server) agentAction(w http.ResponseWriter, r *http.Request) {
	name, action := r.PathValue("name"), r.PathValue("action")
	var op func(string) error
	switch action {
	case "start":
		op = s.opts.Backend.StartAgent
	case "stop":
		op = s.opts.Backend.StopAgent
	case "restart":
		op = s.opts.Backend.RestartAgent
	default:
		writeError(w, http.StatusNotFound, fmt.Sprintf("no such action %q: want start, stop or restart", action))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed; use POST", r.Method))
		return
	}
	s.log.Info("agent "+action+" requested", zap.String("agent", name), peerField(r))
	if err := op(name); err != nil {
		switch {
		case errors.Is(err, ErrUnknownAgent):
			writeError(w, http.StatusNotFound, fmt.Sprintf("%v: %q", ErrUnknownAgent, name))
		case errors.Is(err, ErrConflict):
			writeError(w, http.StatusConflict, err.Error())
		case errors.Is(err, ErrUnavailable):
			writeError(w, http.StatusServiceUnavailable, err.Error())
		default:
			s.log.Warn("agent "+action+" failed", zap.String("agent", name), zap.Error(err))
			writeError(w, http.StatusInternalServerError, err.Error())
		}
		return
	}
	a, ok := s.findAgent(name)
	if !ok { // removed meanwhile
		a = AgentStatus{Name: name}
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) listToolings(w http.ResponseWriter, _ *http.Request) {
	list := s.opts.Backend.Toolings()
	if list == nil {
		list = []ToolingStatus{}
	}
	for i := range list {
		list[i].LastError = CapError(list[i].LastError)
	}
	writeJSON(w, http.StatusOK, ToolingList{Toolings: list})
}

// cluster is /v1/cluster: 404 for a host without [cluster].
func (s *Server) cluster(w http.ResponseWriter, _ *http.Request) {
	cb, ok := s.opts.Backend.(ClusterBackend)
	if !ok {
		writeError(w, http.StatusNotFound, "not a cluster: the config has no [cluster]")
		return
	}
	st, ok := cb.Cluster()
	if !ok {
		writeError(w, http.StatusNotFound, "not a cluster: the config has no [cluster]")
		return
	}
	if st.Members == nil {
		st.Members = []ClusterMember{}
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) reload(w http.ResponseWriter, r *http.Request) {
	s.log.Info("reload requested", peerField(r))
	if err := s.opts.Backend.Reload(); err != nil {
		// The new config was refused (invalid, unreadable, not appliable)
		// and the old one runs on: 422, or 503 when the daemon cannot
		// reload now.
		status := http.StatusUnprocessableEntity
		if errors.Is(err, ErrUnavailable) {
			status = http.StatusServiceUnavailable
		}
		s.log.Warn("reload failed; the running config stays", zap.Error(err))
		writeError(w, status, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "reloaded"})
}
