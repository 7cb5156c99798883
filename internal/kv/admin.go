package kv

// The operators' commands (toolhostd kv ls/get/put/rm/export/import and the
// control API's routes), by agent and bucket name. They are not bound by an
// agent's stores list or quota, but keep its usage counted.

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Agents lists the agents that keep keys.
func (s *Service) Agents(ctx context.Context) (out []string, err error) {
	err = s.do(ctx, opAdmin, Ref{}, func(ctx context.Context) error {
		out, err = s.store.Agents(ctx)
		return err
	})
	return out, err
}

// Buckets lists an agent's buckets that hold keys (a session's is
// "session/ID").
func (s *Service) Buckets(ctx context.Context, agent string) (out []string, err error) {
	err = s.do(ctx, opAdmin, Ref{Agent: agent}, func(ctx context.Context) error {
		out, err = s.store.Buckets(ctx, agent)
		return err
	})
	return out, err
}

// Keys lists up to limit keys of b starting with prefix, after `after`,
// and whether more follow (kv ls AGENT BUCKET --prefix P).
func (s *Service) Keys(ctx context.Context, b Ref, prefix, after string, limit int) (keys []string, more bool, err error) {
	if limit <= 0 {
		limit = s.page
	}
	err = s.do(ctx, opAdmin, b, func(ctx context.Context) error {
		keys, more, err = s.store.List(ctx, b, prefix, after, limit)
		return err
	})
	return keys, more, err
}

// Get is kv get AGENT BUCKET KEY.
func (s *Service) Get(ctx context.Context, b Ref, key string) (v []byte, ok bool, err error) {
	err = s.do(ctx, opAdmin, b, func(ctx context.Context) error {
		v, ok, err = s.store.Get(ctx, b, key)
		return err
	})
	return v, ok, err
}

// Put is kv put AGENT BUCKET KEY VALUE.
func (s *Service) Put(ctx context.Context, b Ref, key string, value []byte) error {
	if err := checkRef(b); err != nil {
		return err
	}
	return s.do(ctx, opAdmin, b, func(ctx context.Context) error { return s.set(ctx, b, key, value, Quota{}) })
}

// Remove is kv rm AGENT BUCKET KEY; removing a missing key is not an
// error.
func (s *Service) Remove(ctx context.Context, b Ref, key string) error {
	return s.do(ctx, opAdmin, b, func(ctx context.Context) error { return s.remove(ctx, b, key) })
}

func checkRef(b Ref) error {
	if b.Agent == "" || b.Bucket == "" {
		return fmt.Errorf("%w: agent and bucket must not be empty", ErrNoSuchStore)
	}
	return nil
}

// Record is a line of an export: one key, its value base64 in JSON.
type Record struct {
	Agent  string `json:"agent"`
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
	Value  []byte `json:"value"`
}

// Export writes the keys of agent (every agent when ""), of bucket (every
// bucket when ""), as JSON lines in order, and returns how many. It is not
// a snapshot: a key written during the export may or may not be in it.
func (s *Service) Export(ctx context.Context, w io.Writer, agent, bucket string) (int, error) {
	agents := []string{agent}
	if agent == "" {
		var err error
		if agents, err = s.Agents(ctx); err != nil {
			return 0, err
		}
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	n := 0
	for _, a := range agents {
		buckets := []string{bucket}
		if bucket == "" {
			var err error
			if buckets, err = s.Buckets(ctx, a); err != nil {
				return n, err
			}
		}
		for _, b := range buckets {
			ref := Ref{Agent: a, Bucket: b}
			after := ""
			for {
				keys, more, err := s.Keys(ctx, ref, "", after, 0)
				if err != nil {
					return n, err
				}
				for _, k := range keys {
					v, ok, err := s.Get(ctx, ref, k)
					if err != nil {
						return n, err
					}
					if !ok {
						continue // removed since listed
					}
					if err := enc.Encode(Record{Agent: a, Bucket: b, Key: k, Value: v}); err != nil {
						return n, err
					}
					n++
				}
				if !more || len(keys) == 0 {
					break
				}
				after = keys[len(keys)-1]
			}
		}
	}
	return n, bw.Flush()
}

// maxImportLine is the longest line of an export: a value of MaxValue in
// base64, its key JSON-escaped (each byte at most \u00XX), and room for
// the agent's and bucket's names and the record's JSON.
var maxImportLine = base64.StdEncoding.EncodedLen(MaxValue) + 6*MaxKeyBytes + 4096

// checkRecord validates an import's record before it is written.
func checkRecord(rec Record) error {
	if rec.Agent == "" || rec.Bucket == "" {
		return errors.New("agent and bucket must not be empty")
	}
	return checkKey(rec.Key)
}

// Import writes each line of an export read from r (replacing keys that
// exist) and returns how many it wrote; an error names the line, and wraps
// ErrBadImport when the line is not a record of an export.
func (s *Service) Import(ctx context.Context, r io.Reader) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxImportLine)
	n, line := 0, 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return n, fmt.Errorf("import line %d: %w: %w", line, ErrBadImport, err)
		}
		if err := checkRecord(rec); err != nil {
			return n, fmt.Errorf("import line %d: %w: %w", line, ErrBadImport, err)
		}
		if err := s.Put(ctx, Ref{Agent: rec.Agent, Bucket: rec.Bucket}, rec.Key, rec.Value); err != nil {
			return n, fmt.Errorf("import line %d: %w", line, err)
		}
		n++
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("import line %d: %w", line+1, err)
	}
	return n, nil
}
