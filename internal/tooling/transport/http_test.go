package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

// header is a Header over http.DefaultTransport with a fresh tracker.
func header(t *testing.T, headers http.Header) *Header {
	return &Header{
		Base: http.DefaultTransport, Headers: headers, Track: NewTracker(true), Status: &HTTPStatus{},
		Limit: &MessageLimit{Max: 1 << 20, Tooling: "t", Log: zaptest.NewLogger(t)},
	}
}

func post(t *testing.T, rt http.RoundTripper, url, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return rt.RoundTrip(req)
}

func TestHeaderSetsHeadersAndRecordsStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Values("X-Key"); len(got) != 2 || got[0] != "a" || got[1] != "b" {
			http.Error(w, "X-Key: "+strings.Join(got, ","), http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/sse" {
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	}))
	defer srv.Close()
	rt := header(t, http.Header{"X-Key": {"a", "b"}})
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %v %v", resp.Status, err)
	}
	resp.Body.Close()
	if len(req.Header) != 0 {
		t.Errorf("the caller's request was changed: %v", req.Header)
	}
	if _, code := rt.Status.get(); code != 0 {
		t.Errorf("a 200 recorded as %d", code)
	}
	resp, err = post(t, rt, srv.URL+"/sse", "{}")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if method, code := rt.Status.get(); method != http.MethodPost || code != http.StatusMethodNotAllowed {
		t.Errorf("recorded %s %d, want POST 405", method, code)
	}
}

func TestHint(t *testing.T) {
	base := errors.New("connect failed")
	st := &HTTPStatus{}
	st.record(http.MethodGet, http.StatusNotFound)
	st.record(http.MethodPost, http.StatusBadRequest) // the first is kept
	other := &HTTPStatus{}
	other.record(http.MethodGet, http.StatusInternalServerError) // not a transport mistake
	tests := []struct {
		transport string
		st        *HTTPStatus
		want      string // "" : err unchanged
	}{
		{HTTP, st, `connect failed (the server answered GET with 404 Not Found to transport "http", streamable HTTP: check the url's path, or set transport = "sse"`},
		{SSE, st, `connect failed (the server answered GET with 404 Not Found to transport "sse", HTTP+SSE: check the url's path, or set transport = "http"`},
		{Stdio, st, ""},
		{HTTP, other, ""},
		{HTTP, nil, ""},
	}
	for _, tt := range tests {
		err := Hint(base, tt.transport, tt.st)
		if !errors.Is(err, base) {
			t.Errorf("%s: %v lost its cause", tt.transport, err)
		}
		if tt.want == "" && err != base || tt.want != "" && !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: %q, want prefix %q", tt.transport, err, tt.want)
		}
	}
}

// A POST of notifications/cancelled is counted as a notice written.
func TestHeaderCountsNotices(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	rt := header(t, nil)
	rt.Track.Begin()
	rt.Track.End(true) // a request given up: a notice is owed
	if rt.Track.Drain(0) {
		t.Fatal("Drain with a notice owed")
	}
	for _, body := range []string{`{"jsonrpc":"2.0","method":"notifications/progress"}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`} {
		resp, err := post(t, rt, srv.URL, body)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if s, p := rt.Track.Counts(); s != 0 || p != 0 {
		t.Errorf("sending %d, pending %d after the notice, want 0 0", s, p)
	}
}

// Once the tracker aborts, requests under way are given up and new ones are
// bounded by CloseGrace.
func TestHeaderAbort(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	rt := header(t, nil)
	errc := make(chan error, 1)
	go func() {
		_, err := post(t, rt, srv.URL, "{}")
		errc <- err
	}()
	<-arrived
	rt.Track.AbortWrites()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("the request under way: %v, want canceled", err)
	}
	start := time.Now()
	_, err := post(t, rt, srv.URL, "{}")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a request after the abort: %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d < CloseGrace {
		t.Errorf("a request after the abort gave up after %v, before CloseGrace", d)
	}
}

// limited is the body of a response of content type ct and body through
// a MessageLimit of max bytes, read whole.
func limited(t *testing.T, max int64, ct, body string) (string, error) {
	t.Helper()
	resp := &http.Response{Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
	(&MessageLimit{Max: max, Tooling: "t", Log: zap.NewNop()}).wrap(resp)
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestMessageLimit(t *testing.T) {
	const max = 40
	big := strings.Repeat("x", 50)
	tooLarge := func(id string, size int) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32090,"message":"` + tooLargeMessage(int64(size), max, "t") + `"}}`
	}
	resp := `{"jsonrpc":"2.0","id":4,"result":"` + big + `"}`
	note := `{"jsonrpc":"2.0","method":"m","params":"` + big + `"}`
	tests := []struct {
		name, ct, body, want string
		err                  bool
	}{
		{"json within", "application/json", `{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":1,"result":{}}`, false},
		{"json over", "application/json; charset=utf-8", resp, tooLarge("4", len(resp)), false},
		{"json over answering nothing", "application/json", note, "", true},
		{"other types pass", "text/plain", big + big, big + big, false},
		{"sse within", "text/event-stream", "event: message\nid: 1\ndata: {\"a\":1}\n\n: comment\n\n", "event: message\nid: 1\ndata: {\"a\":1}\n\n: comment\n\n", false},
		{"sse multi-line data", "text/event-stream", "data: {\"a\":\ndata: 1}\n\n", "data: {\"a\":\ndata: 1}\n\n", false},
		{"sse over", "text/event-stream", "id: 7\ndata: " + resp[:17] + "\ndata:" + resp[17:] + "\n\ndata: {}\n\n",
			"id: 7\ndata: " + tooLarge("4", len(resp)+1) + "\n\ndata: {}\n\n", false},
		{"sse over answering nothing", "text/event-stream", "event: message\ndata: " + note + "\r\n\r\n", "event: message\n\r\n", false},
		{"sse cut mid-event", "text/event-stream", "id: 2\ndata: {}", "id: 2\ndata: {}\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := limited(t, max, tt.ct, tt.body)
			if (err != nil) != tt.err {
				t.Fatalf("read: %v, want error %v", err, tt.err)
			}
			if got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestTrackerDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var nilTracker *Tracker
		if !nilTracker.Drain(time.Second) || !NewTracker(false).Drain(time.Second) {
			t.Error("a nil or unobserved tracker does not drain at once")
		}
		tr := NewTracker(true)
		tr.Begin()
		start := time.Now()
		if tr.Drain(time.Second) {
			t.Error("drained with a request in flight")
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("gave up after %v, want 1s", d)
		}
		go func() {
			time.Sleep(100 * time.Millisecond)
			tr.End(true)
			time.Sleep(100 * time.Millisecond)
			tr.NoticeWritten()
		}()
		start = time.Now()
		if !tr.Drain(time.Second) {
			t.Error("did not drain once the request ended and its notice was written")
		}
		if d := time.Since(start); d != 200*time.Millisecond {
			t.Errorf("drained after %v, want 200ms", d)
		}
		since := time.Now()
		if tr.AnsweredSince(since) {
			t.Error("answered before any answer")
		}
		time.Sleep(time.Millisecond)
		tr.Answered()
		if !tr.AnsweredSince(since) {
			t.Error("an answer not seen")
		}
	})
}

func TestLineLogger(t *testing.T) {
	log, logs := observerLogger()
	l := &LineLogger{Log: log}
	for _, p := range []string{"fir", "st\nsec", "ond\r\n\n", "tail"} {
		if n, err := l.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q): %d %v", p, n, err)
		}
	}
	if got := l.lastLine(); got != "tail" {
		t.Errorf("lastLine %q, want the partial line", got)
	}
	l.Flush()
	long := bytes.Repeat([]byte("y"), maxStderrLine+1)
	l.Write(long)
	var lines []string
	for _, e := range logs.All() {
		lines = append(lines, e.ContextMap()["line"].(string))
	}
	want := []string{"first", "second", "tail", string(long)}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("logged %d lines %.40q, want %.40q", len(lines), lines, want)
	}
	if got := l.lastLine(); got != string(long[:300])+"…" {
		t.Errorf("lastLine of a long line: %.40q…, want it truncated to 300 bytes", got)
	}
}

func TestRateLimitedWarn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, logs := observerLogger()
		w := &rateLimitedWarn{log: log, every: 10 * time.Second, burst: 2}
		for range 5 {
			w.warn("bad line")
		}
		time.Sleep(10 * time.Second)
		w.warn("bad line")
		var got []string
		for _, e := range logs.All() {
			got = append(got, e.Message)
			if n, ok := e.ContextMap()["lines"]; ok && n != int64(3) {
				t.Errorf("lines %v, want 3", n)
			}
		}
		want := "bad line|bad line|more lines of the server's stdout that are not JSON-RPC were skipped|bad line"
		if strings.Join(got, "|") != want {
			t.Errorf("logged %q, want %q", strings.Join(got, "|"), want)
		}
	})
}
