package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// ErrNoSuchKey is in the chain of KVGet's error for a key without a value
// (the server's 404 for such a key starts with its text).
var ErrNoSuchKey = errors.New("no such key")

// kvPath is /v1/kv/ followed by the segments, each escaped whole (a
// session's bucket "session/ID" and a key with a / stay one segment; a key
// "." or ".." has its dots escaped, as a path would drop them).
func kvPath(segs ...string) string {
	var b strings.Builder
	b.WriteString("/v1/kv")
	for _, s := range segs {
		b.WriteByte('/')
		if s == "." || s == ".." {
			b.WriteString(strings.Repeat("%2E", len(s)))
			continue
		}
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// kvDo makes one request with body (nil: none, else the value's bytes or
// an export) and returns a 2xx response, its body open; any other status
// is an *APIError.
func (c *Client) kvDo(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	return c.send(ctx, method, path, body, func(h http.Header) {
		if body != nil {
			h.Set("Content-Type", "application/octet-stream")
		}
	})
}

// KVAgents lists the agents that keep keys.
func (c *Client) KVAgents(ctx context.Context) ([]string, error) {
	var l KVAgents
	err := c.do(ctx, http.MethodGet, kvPath(), &l)
	return l.Agents, err
}

// KVBuckets lists an agent's buckets that hold keys; the error wraps
// ErrUnknownAgent for an agent that keeps none and is not the host's.
func (c *Client) KVBuckets(ctx context.Context, agent string) ([]string, error) {
	var l KVBuckets
	err := c.do(ctx, http.MethodGet, kvPath(agent), &l)
	var ae *APIError
	if errors.As(err, &ae) {
		return nil, agentError{ae}
	}
	return l.Buckets, err
}

// KVKeys is a page of a bucket's keys starting with prefix, after cursor
// ("" for the first page), and the next page's cursor ("" after the last).
func (c *Client) KVKeys(ctx context.Context, agent, bucket, prefix, cursor string) ([]string, string, error) {
	q := url.Values{}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	path := kvPath(agent, bucket)
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var page KVKeys
	err := c.do(ctx, http.MethodGet, path, &page)
	return page.Keys, page.Cursor, err
}

// KVGet is a key's value; the error wraps ErrNoSuchKey when it has none.
func (c *Client) KVGet(ctx context.Context, agent, bucket, key string) ([]byte, error) {
	resp, err := c.kvDo(ctx, http.MethodGet, kvPath(agent, bucket, key), nil)
	if err != nil {
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound && strings.HasPrefix(ae.Message, ErrNoSuchKey.Error()) {
			return nil, keyError{ae}
		}
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// keyError is a 404 for a key without a value.
type keyError struct{ *APIError }

func (e keyError) Unwrap() []error { return []error{e.APIError, ErrNoSuchKey} }

// KVPut sets a key's value.
func (c *Client) KVPut(ctx context.Context, agent, bucket, key string, value []byte) error {
	resp, err := c.kvDo(ctx, http.MethodPut, kvPath(agent, bucket, key), bytes.NewReader(value))
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// KVRemove removes a key (a key without a value is not an error).
func (c *Client) KVRemove(ctx context.Context, agent, bucket, key string) error {
	resp, err := c.kvDo(ctx, http.MethodDelete, kvPath(agent, bucket, key), nil)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// KVExport copies the export of agent's keys (every agent when ""), of
// bucket (every bucket when ""), JSON lines, to w. A response the daemon
// cut is an error.
func (c *Client) KVExport(ctx context.Context, w io.Writer, agent, bucket string) error {
	q := url.Values{}
	if agent != "" {
		q.Set("agent", agent)
	}
	if bucket != "" {
		q.Set("bucket", bucket)
	}
	path := kvPath("export")
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	resp, err := c.kvDo(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("toolhostd at %s: the export was cut: %w", c.where, err)
	}
	return nil
}

// KVImport sends an export (JSON lines) read from r and returns how many
// keys were written.
func (c *Client) KVImport(ctx context.Context, r io.Reader) (int, error) {
	resp, err := c.kvDo(ctx, http.MethodPost, kvPath("import"), r)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out KVImported
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, fmt.Errorf("toolhostd at %s: bad answer to the import: %w", c.where, err)
	}
	return out.Imported, nil
}
