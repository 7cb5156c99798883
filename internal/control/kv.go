package control

// The key-value store's routes (toolhostd kv ...): an agent's buckets and
// keys, a key's value, export and import. The operators are not bound by
// an agent's stores list or quota (their writes count in its usage).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/kv"
)

// maxValueBody bounds a PUT's body at the store's value limit
// (kv.MaxValue, which the store enforces for every writer; the etcd
// backend refuses values past kv.MaxEtcdValue itself); maxImportBody
// bounds an import's whole body (its lines are bounded by kv.Import).
const (
	maxValueBody  = kv.MaxValue
	maxImportBody = 1 << 30
)

// KVStore is the key-value store the API drives (*kv.Service).
type KVStore interface {
	Agents(ctx context.Context) ([]string, error)
	Buckets(ctx context.Context, agent string) ([]string, error)
	Keys(ctx context.Context, b kv.Ref, prefix, after string, limit int) ([]string, bool, error)
	Get(ctx context.Context, b kv.Ref, key string) ([]byte, bool, error)
	Put(ctx context.Context, b kv.Ref, key string, value []byte) error
	Remove(ctx context.Context, b kv.Ref, key string) error
	Export(ctx context.Context, w io.Writer, agent, bucket string) (int, error)
	Import(ctx context.Context, r io.Reader) (int, error)
}

// KVAgents is the body of GET /v1/kv: the agents that keep keys.
type KVAgents struct {
	Agents []string `json:"agents"`
}

// KVBuckets is the body of GET /v1/kv/{agent}: its buckets that hold keys.
type KVBuckets struct {
	Buckets []string `json:"buckets"`
}

// KVKeys is the body of GET /v1/kv/{agent}/{bucket}: a page of keys in
// bytewise order, and the cursor of the next page ("" after the last).
type KVKeys struct {
	Keys   []string `json:"keys"`
	Cursor string   `json:"cursor,omitempty"`
}

// KVImported is the body of POST /v1/kv/import.
type KVImported struct {
	Imported int `json:"imported"`
}

// kvRoutes adds the key-value endpoints to mux.
func (s *Server) kvRoutes(mux *http.ServeMux) {
	mux.HandleFunc("/v1/kv", only(http.MethodGet, s.kvAgents))
	mux.HandleFunc("/v1/kv/export", only(http.MethodGet, s.kvExport))
	mux.HandleFunc("/v1/kv/import", only(http.MethodPost, s.kvImport))
	mux.HandleFunc("/v1/kv/{agent}", only(http.MethodGet, s.kvBuckets))
	mux.HandleFunc("/v1/kv/{agent}/{bucket}", only(http.MethodGet, s.kvKeys))
	mux.HandleFunc("/v1/kv/{agent}/{bucket}/{key...}", s.kvKey)
}

// kvStore is the store, or false after answering 404 without one.
func (s *Server) kvStore(w http.ResponseWriter) (KVStore, bool) {
	if s.opts.KV == nil {
		writeError(w, http.StatusNotFound, "the key-value store is not served here")
		return nil, false
	}
	return s.opts.KV, true
}

// kvError answers err of the store with its kvStatus.
func kvError(w http.ResponseWriter, err error) {
	writeError(w, kvStatus(err), "key-value store: "+err.Error())
}

// kvStatus is the status of an error of the store: 400 an import line
// that is no record, 404 no such bucket, 403 access denied, 413 a value
// or an import past a limit, 507 a quota, 500 else (the store failed).
func kvStatus(err error) int {
	var q *kv.QuotaError
	var big *kv.TooLargeError
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, kv.ErrBadImport):
		return http.StatusBadRequest
	case errors.Is(err, kv.ErrNoSuchStore):
		return http.StatusNotFound
	case errors.Is(err, kv.ErrAccessDenied):
		return http.StatusForbidden
	case errors.As(err, &big), errors.As(err, &tooBig), errors.Is(err, bufio.ErrTooLong):
		return http.StatusRequestEntityTooLarge
	case errors.As(err, &q):
		return http.StatusInsufficientStorage
	}
	return http.StatusInternalServerError
}

func (s *Server) kvAgents(w http.ResponseWriter, r *http.Request) {
	st, ok := s.kvStore(w)
	if !ok {
		return
	}
	agents, err := st.Agents(r.Context())
	if err != nil {
		kvError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, KVAgents{Agents: nonNilStrings(agents)})
}

// kvBuckets lists an agent's buckets; 404 for an agent that keeps no keys
// and is not one of the config's (an agent another cluster host runs is).
func (s *Server) kvBuckets(w http.ResponseWriter, r *http.Request) {
	st, ok := s.kvStore(w)
	if !ok {
		return
	}
	agent := r.PathValue("agent")
	buckets, err := st.Buckets(r.Context(), agent)
	if err != nil {
		kvError(w, err)
		return
	}
	if len(buckets) == 0 {
		if !s.configured(agent) {
			writeError(w, http.StatusNotFound, fmt.Sprintf("%v: %q keeps no keys and is not an agent of the config", ErrUnknownAgent, agent))
			return
		}
	}
	writeJSON(w, http.StatusOK, KVBuckets{Buckets: nonNilStrings(buckets)})
}

// kvKeys is a page of a bucket's keys: ?prefix= narrows them, ?cursor= is
// the previous page's cursor, ?limit= the page's size (default
// kv.DefaultPage).
func (s *Server) kvKeys(w http.ResponseWriter, r *http.Request) {
	st, ok := s.kvStore(w)
	if !ok {
		return
	}
	q := r.URL.Query()
	limit := 0
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > kv.DefaultPage {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("limit %q: want 1 to %d", l, kv.DefaultPage))
			return
		}
		limit = n
	}
	ref := kv.Ref{Agent: r.PathValue("agent"), Bucket: r.PathValue("bucket")}
	keys, more, err := st.Keys(r.Context(), ref, q.Get("prefix"), q.Get("cursor"), limit)
	if err != nil {
		kvError(w, err)
		return
	}
	page := KVKeys{Keys: nonNilStrings(keys)}
	if more && len(keys) > 0 {
		page.Cursor = keys[len(keys)-1]
	}
	writeJSON(w, http.StatusOK, page)
}

// kvKey is GET (the value's bytes), PUT (the body is the value) and
// DELETE of one key.
func (s *Server) kvKey(w http.ResponseWriter, r *http.Request) {
	st, ok := s.kvStore(w)
	if !ok {
		return
	}
	ref := kv.Ref{Agent: r.PathValue("agent"), Bucket: r.PathValue("bucket")}
	key := r.PathValue("key")
	if len(key) > kv.MaxKeyBytes {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("key of %d bytes: the limit is %d", len(key), kv.MaxKeyBytes))
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		v, found, err := st.Get(r.Context(), ref, key)
		switch {
		case err != nil:
			kvError(w, err)
		case !found:
			writeError(w, http.StatusNotFound, fmt.Sprintf("%v: %q in bucket %s", ErrNoSuchKey, key, ref)) // KVGet knows it by the sentinel
		default:
			h := w.Header()
			h.Set("Content-Type", "application/octet-stream")
			h.Set("Content-Length", strconv.Itoa(len(v)))
			h.Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusOK)
			if r.Method == http.MethodGet {
				w.Write(v)
			}
		}
	case http.MethodPut:
		v, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxValueBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("value over the store's limit of %d bytes", tooBig.Limit))
				return
			}
			writeError(w, http.StatusBadRequest, "reading the value: "+err.Error())
			return
		}
		if err := st.Put(r.Context(), ref, key, v); err != nil {
			kvError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case http.MethodDelete:
		if err := st.Remove(r.Context(), ref, key); err != nil {
			kvError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT, DELETE")
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed; use GET, PUT or DELETE", r.Method))
	}
}

// kvExport streams the keys (?agent=, ?bucket= narrow them) as JSON lines.
// A failure once lines were sent aborts the response, so that a client
// never takes a cut export for a whole one.
func (s *Server) kvExport(w http.ResponseWriter, r *http.Request) {
	st, ok := s.kvStore(w)
	if !ok {
		return
	}
	q := r.URL.Query()
	agent, bucket := q.Get("agent"), q.Get("bucket")
	if bucket != "" && agent == "" {
		writeError(w, http.StatusBadRequest, "?bucket= needs ?agent=")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/jsonl")
	h.Set("Cache-Control", "no-store")
	cw := &countingWriter{w: w}
	n, err := st.Export(r.Context(), cw, agent, bucket)
	if err == nil {
		return
	}
	if cw.n == 0 {
		h.Del("Content-Type")
		kvError(w, err)
		return
	}
	s.log.Warn("key-value export cut", zap.Int("keys", n), zap.Error(err), peerField(r))
	panic(http.ErrAbortHandler)
}

// countingWriter counts what went through to w.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// kvImport writes each JSON line of the body (an export); the error names
// the line that failed (the lines before it are written), with kvStatus's
// status: 400 only for a line that is not a record.
func (s *Server) kvImport(w http.ResponseWriter, r *http.Request) {
	st, ok := s.kvStore(w)
	if !ok {
		return
	}
	n, err := st.Import(r.Context(), http.MaxBytesReader(w, r.Body, maxImportBody))
	if err != nil {
		writeError(w, kvStatus(err), fmt.Sprintf("key-value import: %v (%d keys written before it)", err, n))
		return
	}
	writeJSON(w, http.StatusOK, KVImported{Imported: n})
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// configured reports whether name is an agent of the config: one the
// backend lists, or one it knows runs elsewhere.
func (s *Server) configured(name string) bool {
	if cb, ok := s.opts.Backend.(ConfigBackend); ok {
		return cb.Configured(name)
	}
	_, ok := s.findAgent(name)
	return ok
}
