package control

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/tracing"
)

// Default places of the control socket.
const (
	// SocketName is the socket's file name in $RUNTIME_DIRECTORY.
	SocketName = "toolhostd.sock"
	// FallbackSocket is used when $RUNTIME_DIRECTORY is not set.
	FallbackSocket = "/run/toolhostd/toolhostd.sock"
	// SocketMode is the permission of the socket file.
	SocketMode = 0o660
	// DefaultShutdownTimeout bounds a graceful stop of Serve.
	DefaultShutdownTimeout = 5 * time.Second
	// maxSocketPath is the room in sockaddr_un.sun_path (108 with its NUL).
	maxSocketPath = 107
)

// DefaultSocket is the control socket when the config names none: the first
// directory of $RUNTIME_DIRECTORY (set by systemd's RuntimeDirectory=)
// joined with SocketName, else FallbackSocket.
func DefaultSocket() string {
	if rd := os.Getenv("RUNTIME_DIRECTORY"); rd != "" {
		first, _, _ := strings.Cut(rd, ":")
		if filepath.IsAbs(first) {
			return filepath.Join(first, SocketName)
		}
	}
	return FallbackSocket
}

// Options configure a Server.
type Options struct {
	// Backend is the daemon the API drives (required).
	Backend Backend
	// Gatherer serves /metrics; nil answers 404 there.
	Gatherer prometheus.Gatherer
	// Socket is the unix socket path; "" means DefaultSocket().
	Socket string
	// Listen is an optional TCP address (host:port) served behind Token.
	Listen string
	// Token is the bearer token for Listen as written in the config (a
	// ${env:...} or ${file:...} reference, or a literal). Serve expands it
	// with config.Expand; it is never logged.
	Token string
	// Log receives the server's logs (nil: none).
	Log *zap.Logger
	// Messages serves /v1/agents/{name}/messages (nil: those answer 404).
	Messages Messenger
	// KV serves /v1/kv (kv.go; nil: those answer 404).
	KV KVStore
	// Traces serves /v1/traces (traces.go; nil: those answer 404).
	Traces *tracing.Recent
	// ShutdownTimeout bounds the graceful stop at the end of Serve
	// (0: DefaultShutdownTimeout); requests still running then are cut.
	ShutdownTimeout time.Duration
}

// Server is the control API. It is a suture.Service.
type Server struct {
	opts    Options
	log     *zap.Logger
	handler http.Handler
	uid     int

	listening     chan struct{}
	listeningOnce sync.Once
	mu            sync.Mutex
	tcpAddr       net.Addr
}

// NewServer checks opts and builds the server; Serve listens.
func NewServer(opts Options) (*Server, error) {
	if opts.Backend == nil {
		return nil, errors.New("control: no backend")
	}
	if opts.Listen != "" && opts.Token == "" {
		return nil, fmt.Errorf("control: listen %s: %w", opts.Listen, errNoToken)
	}
	if opts.Socket == "" {
		opts.Socket = DefaultSocket()
	}
	if len(opts.Socket) > maxSocketPath {
		return nil, fmt.Errorf("control: socket path %s is too long (at most %d bytes)", opts.Socket, maxSocketPath)
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	s := &Server{opts: opts, log: log.Named("control"), uid: os.Getuid(), listening: make(chan struct{})}
	s.handler = s.routes()
	return s, nil
}

// Socket is the unix socket path the server listens on.
func (s *Server) Socket() string { return s.opts.Socket }

// Listening is closed once Serve has its listeners up for the first time.
func (s *Server) Listening() <-chan struct{} { return s.listening }

// TCPAddr is the bound TCP address (useful with port 0), nil when not
// listening on TCP.
func (s *Server) TCPAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tcpAddr
}

// Serve listens on the socket (and on TCP when configured) and serves until
// ctx ends; then it stops accepting, lets running requests finish for at
// most ShutdownTimeout, and removes the socket. It returns nil after a stop
// caused by ctx, an error when it cannot listen or a listener fails.
func (s *Server) Serve(ctx context.Context) error {
	var token []byte
	if s.opts.Listen != "" {
		tok, err := config.Expand(s.opts.Token) // errors never show the value
		if err != nil {
			return fmt.Errorf("control_token: %w", err)
		}
		if tok == "" {
			return fmt.Errorf("control_token is empty: %w", errNoToken)
		}
		sum := sha256.Sum256([]byte(tok))
		token = sum[:]
	}
	ul, sock, err := listenUnix(s.opts.Socket)
	if err != nil {
		return err
	}
	var tl net.Listener
	if s.opts.Listen != "" {
		if tl, err = net.Listen("tcp", s.opts.Listen); err != nil {
			ul.Close()
			removeSocket(s.opts.Socket, sock)
			return fmt.Errorf("control: %w", err)
		}
	}
	// Requests (message streams above all) end when the shutdown begins.
	reqCtx, endRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer endRequests()
	srv := &http.Server{
		BaseContext:       func(net.Listener) context.Context { return reqCtx },
		Handler:           s.authenticate(token),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          zap.NewStdLog(s.log.WithOptions(zap.IncreaseLevel(zap.WarnLevel))),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if pc, ok := c.(*peerConn); ok {
				return context.WithValue(ctx, peerKey{}, pc)
			}
			return ctx
		},
	}
	serving := 1
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(&peerListener{UnixListener: ul, s: s}) }()
	fields := []zap.Field{zap.String("socket", s.opts.Socket)}
	if tl != nil {
		serving++
		go func() { errc <- srv.Serve(tl) }()
		fields = append(fields, zap.String("listen", tl.Addr().String()))
		if ta, ok := tl.Addr().(*net.TCPAddr); ok && !ta.IP.IsLoopback() {
			s.log.Warn("control API on a non-loopback TCP address without TLS: its bearer token crosses the network in clear",
				zap.String("listen", tl.Addr().String()))
		}
	}
	s.mu.Lock()
	if tl != nil {
		s.tcpAddr = tl.Addr()
	} else {
		s.tcpAddr = nil
	}
	s.mu.Unlock()
	s.listeningOnce.Do(func() { close(s.listening) })
	s.log.Info("control API listening", fields...)

	var failed error
	select {
	case <-ctx.Done():
	case failed = <-errc:
		serving--
		failed = fmt.Errorf("control: %w", failed)
	}
	endRequests()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ShutdownTimeout)
	if err := srv.Shutdown(sctx); err != nil {
		s.log.Warn("control API: requests cut at shutdown", zap.Error(err))
		srv.Close()
	}
	cancel()
	for ; serving > 0; serving-- {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) && failed == nil {
			failed = fmt.Errorf("control: %w", err)
		}
	}
	removeSocket(s.opts.Socket, sock)
	s.mu.Lock()
	s.tcpAddr = nil
	s.mu.Unlock()
	s.log.Info("control API stopped")
	return failed
}

// listenUnix binds the socket at path with mode SocketMode. It binds a
// temporary name in the same directory, sets the mode, then renames it into
// place, so the socket is never reachable with a wider mode. A socket left
// by a dead daemon is replaced; one that answers is ErrInUse. It returns the
// listener and the socket file's identity (for removeSocket).
func listenUnix(path string) (*net.UnixListener, os.FileInfo, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("control: socket directory: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, nil, fmt.Errorf("control: %s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, nil, fmt.Errorf("control: %s: %w: another toolhostd is listening", path, ErrInUse)
		}
	}
	tmp := filepath.Join(dir, fmt.Sprintf(".th%d.sock", os.Getpid()))
	if len(tmp) > maxSocketPath {
		tmp = path // no room for a longer name: bind in place
	}
	os.Remove(tmp) // left by a crash of this very pid number
	if tmp == path {
		os.Remove(path) // stale (checked above)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, nil, fmt.Errorf("control: %w", err)
	}
	l.SetUnlinkOnClose(false) // removeSocket does it, knowing the final name
	fail := func(err error) (*net.UnixListener, os.FileInfo, error) {
		l.Close()
		os.Remove(tmp)
		return nil, nil, fmt.Errorf("control: %w", err)
	}
	if err := os.Chmod(tmp, SocketMode); err != nil {
		return fail(err)
	}
	if tmp != path {
		if err := os.Rename(tmp, path); err != nil {
			return fail(err)
		}
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fail(err)
	}
	return l, fi, nil
}

// removeSocket removes path if it is still the socket this server bound
// (another daemon may have replaced it since).
func removeSocket(path string, mine os.FileInfo) {
	if fi, err := os.Lstat(path); err == nil && os.SameFile(fi, mine) {
		os.Remove(path)
	}
}

// ---- the unix socket's peer check ----

type peerKey struct{}

// peerConn is an accepted unix connection with its peer's credentials.
type peerConn struct {
	*net.UnixConn
	pid, uid int
	refused  string // why the peer may not use the API; "" when it may
}

// peerListener checks SO_PEERCRED on every accepted connection.
type peerListener struct {
	*net.UnixListener
	s *Server
}

func (l *peerListener) Accept() (net.Conn, error) {
	c, err := l.AcceptUnix()
	if err != nil {
		return nil, err
	}
	pc := &peerConn{UnixConn: c, pid: -1, uid: -1}
	pid, uid, err := peerCred(c)
	switch {
	case err != nil:
		pc.refused = "peer credentials unavailable"
		l.s.log.Warn("control socket: refused a client", zap.Error(err))
	case uid != 0 && uid != l.s.uid:
		pc.pid, pc.uid = pid, uid
		pc.refused = fmt.Sprintf("uid %d may not use the control socket (only uid %d and root)", uid, l.s.uid)
		l.s.log.Warn("control socket: refused a client", zap.Int("uid", uid), zap.Int("pid", pid))
	default:
		pc.pid, pc.uid = pid, uid
	}
	return pc, nil
}

// ---- HTTP ----

// authenticate admits a request: on the unix socket by the peer check, on
// TCP by the bearer token (whose sha256 is token), except the GET probes
// /healthz and /readyz, which orchestrators (Kubernetes httpGet) call
// without credentials.
func (s *Server) authenticate(token []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pc, ok := r.Context().Value(peerKey{}).(*peerConn); ok {
			if pc.refused != "" {
				w.Header().Set("Connection", "close")
				writeError(w, http.StatusForbidden, pc.refused)
				return
			}
			s.handler.ServeHTTP(w, r)
			return
		}
		if token == nil { // not a unix connection and no TCP configured
			writeError(w, http.StatusForbidden, "not served here")
			return
		}
		if probe(r) { // liveness and readiness tell nothing secret
			s.handler.ServeHTTP(w, r)
			return
		}
		auth := r.Header.Get("Authorization")
		scheme, got, ok := strings.Cut(auth, " ")
		if auth == "" || !ok || !strings.EqualFold(scheme, "Bearer") {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolhostd"`)
			writeError(w, http.StatusUnauthorized, "missing bearer token")
			return
		}
		sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
		if subtle.ConstantTimeCompare(sum[:], token) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolhostd", error="invalid_token"`)
			writeError(w, http.StatusUnauthorized, "invalid bearer token")
			s.log.Warn("control API: invalid bearer token", zap.String("remote", r.RemoteAddr))
			return
		}
		s.handler.ServeHTTP(w, r)
	})
}

// probe reports the unauthenticated health and readiness probes.
func probe(r *http.Request) bool {
	return r.Method == http.MethodGet && (r.URL.Path == "/healthz" || r.URL.Path == "/readyz")
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/agents", only(http.MethodGet, s.listAgents))
	mux.HandleFunc("/v1/agents/{name}", only(http.MethodGet, s.getAgent))
	mux.HandleFunc("/v1/agents/{name}/{action}", s.agentAction)
	s.messageRoutes(mux)
	s.oplogRoutes(mux)
	s.kvRoutes(mux)
	s.traceRoutes(mux)
	mux.HandleFunc("/v1/toolings", only(http.MethodGet, s.listToolings))
	mux.HandleFunc("/v1/reload", only(http.MethodPost, s.reload))
	mux.HandleFunc("/v1/cluster", only(http.MethodGet, s.cluster))
	mux.HandleFunc("/healthz", only(http.MethodGet, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}))
	mux.HandleFunc("/readyz", only(http.MethodGet, func(w http.ResponseWriter, _ *http.Request) {
		if !s.opts.Backend.Ready() {
			writeError(w, http.StatusServiceUnavailable, "not ready: not every agent has started or not every tooling has connected yet")
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	}))
	var metrics http.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "metrics are not enabled")
	})
	if s.opts.Gatherer != nil {
		metrics = promhttp.HandlerFor(s.opts.Gatherer, promhttp.HandlerOpts{
			ErrorLog:      zap.NewStdLog(s.log.WithOptions(zap.IncreaseLevel(zap.WarnLevel))),
			ErrorHandling: promhttp.ContinueOnError,
		})
	}
	mux.HandleFunc("/metrics", only(http.MethodGet, metrics.ServeHTTP))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// ServeMux would redirect an unclean path with an HTML body.
		// The escaped path, as ServeMux cleans it: a key's %2F stays in
		// its segment.
		if p := r.URL.EscapedPath(); p == "" || p[0] != '/' || path.Clean(p) != p {
			writeError(w, http.StatusNotFound, "no such endpoint: "+p)
			return
		}
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		mux.ServeHTTP(rec, r)
		if ce := s.log.Check(zap.DebugLevel, "control request"); ce != nil {
			ce.Write(zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Int("status", rec.status),
				zap.Duration("duration", time.Since(start)), peerField(r))
		}
	})
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func peerField(r *http.Request) zap.Field {
	if pc, ok := r.Context().Value(peerKey{}).(*peerConn); ok {
		return zap.Int("uid", pc.uid)
	}
	return zap.String("remote", r.RemoteAddr)
}
