package oauth

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// LoginOptions make sessions of an OAuth tooling run the authorization-code
// flow themselves when the server wants a token (see mcpclient.Options.Login and mcpclient.Login).
type LoginOptions struct {
	// Prompt gets the line "Open this URL to authorize: URL" (stderr).
	Prompt io.Writer
	// Open, if set, is called with the authorization URL: a browser, or
	// FollowRedirects for an authorization server that approves without a
	// person. The flow then waits for the loopback redirect either way.
	Open func(ctx context.Context, url string) error
	// Fresh ignores stored tokens: the flow runs at the first request.
	Fresh bool
}

// FollowRedirects fetches url with an HTTP client that follows redirects:
// with an authorization server that approves at once (test and conformance
// servers), that ends at the loopback redirect and completes the flow.
func FollowRedirects(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	c := &http.Client{Timeout: oauthRequestTimeout}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 400 {
		return fmt.Errorf("GET %s: %s", resp.Request.URL.Redacted(), resp.Status)
	}
	return nil
}

// loopback receives the authorization redirect on 127.0.0.1.
type loopback struct {
	redirect string
	results  chan callbackResult
	srv      *http.Server
	done     chan struct{}
	once     sync.Once
	flow     sync.Mutex // held by the flow waiting for the redirect
}

type callbackResult struct {
	res *auth.AuthorizationResult
	err error
}

// startLoopback listens on 127.0.0.1:port (0: any free port) for
// /callback.
func startLoopback(port int) (*loopback, error) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, fmt.Errorf("listening for the authorization redirect: %w", err)
	}
	lb := &loopback{
		redirect: fmt.Sprintf("http://%s/callback", ln.Addr()),
		results:  make(chan callbackResult, 1),
		done:     make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /callback", lb.callback)
	lb.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(lb.done)
		_ = lb.srv.Serve(ln)
	}()
	return lb, nil
}

func (lb *loopback) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var res callbackResult
	if e := q.Get("error"); e != "" {
		msg := e
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		res.err = fmt.Errorf("the authorization server refused: %s", msg)
	} else if q.Get("code") == "" {
		http.Error(w, "no authorization code in the redirect", http.StatusBadRequest)
		return
	} else {
		res.res = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
	}
	select {
	case lb.results <- res:
	default: // a result is already waiting
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if res.err != nil {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, "<!doctype html><title>toolhostd</title><p>toolhostd: authorization failed: %s</p>\n", html.EscapeString(res.err.Error()))
		return
	}
	fmt.Fprint(w, "<!doctype html><title>toolhostd</title><p>toolhostd is authorized. You can close this window.</p>\n")
}

// drain drops a redirect left over from an earlier flow.
func (lb *loopback) drain() {
	select {
	case <-lb.results:
	default:
	}
}

func (lb *loopback) close() {
	lb.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := lb.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = lb.srv.Close()
		}
		<-lb.done
	})
}
