package container

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// How long the daemon gets to have every agent running: a cold compile cache
// compiles each 12 MB componentize-js agent (5-15 s, several at once on a
// loaded machine).
const (
	runningWithin = 6 * time.Minute
	stopWithin    = 60 * time.Second
)

// layout is the image's filesystem, made by install-layout.sh under root.
type layout struct {
	repo     string
	root     string
	uid, gid int
	cred     *syscall.Credential // nil: run as the test's own user
	nodeDir  string
}

// imagePath is where the image's absolute path p lives in the layout.
func (l *layout) imagePath(p string) string { return filepath.Join(l.root, p) }

// mapping sends an image path to a directory outside the layout (a mounted
// volume); the longest matching prefix wins, any other absolute path goes
// to the layout.
type mapping map[string]string

func (l *layout) resolve(p string, m mapping) string {
	best := ""
	for from := range m {
		if (p == from || strings.HasPrefix(p, from+"/")) && len(from) > len(best) {
			best = from
		}
	}
	if best != "" {
		return filepath.Join(m[best], strings.TrimPrefix(p, best))
	}
	return l.imagePath(p)
}

var quotedAbsPath = regexp.MustCompile(`"(/[^"]*)"`)

// rewrite points every absolute path of a TOML config (a double-quoted
// string starting with /) into the layout or a mapped volume.
func (l *layout) rewrite(text string, m mapping) string {
	return quotedAbsPath.ReplaceAllStringFunc(text, func(q string) string {
		return strconv.Quote(l.resolve(q[1:len(q)-1], m))
	})
}

// newLayout builds toolhostd and runs install-layout.sh into a temporary
// root readable by the image's user, with the agents built as the image
// builds them (componentize-qjs) and a copy of the repository's runtime npm
// packages; the script precompiles the agents and leaves no npm log.
func newLayout(t *testing.T, im image) *layout {
	t.Helper()
	repo := testenv.Root(t)
	agents := filepath.Dir(testenv.Agent(t, "agents-qjs", "hello"))
	testenv.NPMServer(t, "server-everything")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	l := &layout{repo: repo, nodeDir: filepath.Dir(node), uid: os.Getuid(), gid: os.Getgid()}
	if os.Geteuid() == 0 {
		// Run as the image's USER (uid:gid), as the container does.
		u, g, ok := strings.Cut(im.user, ":")
		l.uid, err = strconv.Atoi(u)
		if err == nil && ok {
			l.gid, err = strconv.Atoi(g)
		}
		if err != nil || !ok || l.uid == 0 {
			t.Fatalf("Dockerfile: USER %q: want a numeric non-root uid:gid", im.user)
		}
		l.cred = &syscall.Credential{Uid: uint32(l.uid), Gid: uint32(l.gid)}
	}
	dir := t.TempDir()
	// t.TempDir's directories are 0700: the image's user must reach the root.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l.root = filepath.Join(dir, "root")
	bin := filepath.Join(dir, "toolhostd")
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	// As the Dockerfile builds it (its tags), but with the symbols.
	build := []string{"build", "-o", bin}
	if tags := imageBuildTags(t, filepath.Join(repo, "Dockerfile")); tags != "" {
		build = append(build, "-tags", tags)
	}
	run(t, repo, gobin, append(build, "./cmd/toolhostd")...)
	checkMethodDeadCode(t, gobin, bin)
	home := filepath.Join(dir, "home")
	script := exec.Command("bash", filepath.Join(repo, "deploy", "container", "install-layout.sh"),
		"--root", l.root, "--toolhostd", bin, "--agents", agents,
		"--node-modules", filepath.Join(repo, "node_modules"),
		"--owner", fmt.Sprintf("%d:%d", l.uid, l.gid))
	script.Dir, script.Env = repo, append(os.Environ(), "HOME="+home)
	if out, err := script.CombinedOutput(); err != nil {
		t.Fatalf("install-layout.sh: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(home, ".npm")); !os.IsNotExist(err) {
		t.Errorf("install-layout.sh left npm's files in its HOME (the image's /root/.npm): %v", err)
	}
	wasm, _ := filepath.Glob(filepath.Join(agents, "*.wasm"))
	if cwasm, _ := filepath.Glob(l.imagePath("/var/cache/toolhostd/*.cwasm")); len(cwasm) != len(wasm) || len(wasm) == 0 {
		t.Errorf("install-layout.sh precompiled %d entries for %d agents", len(cwasm), len(wasm))
	}
	var unused []string
	filepath.WalkDir(l.imagePath("/opt/toolhostd/node_modules"), func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() && (strings.HasSuffix(p, ".map") || strings.HasSuffix(p, ".d.ts")) {
			unused = append(unused, p)
		}
		return err
	})
	if len(unused) > 0 {
		t.Errorf("install-layout.sh left %d files node never loads (source maps, type declarations), e.g. %s", len(unused), unused[0])
	}
	// The watcher agent of the shipped config reads this resource.
	if _, err := os.Stat(l.imagePath("/opt/toolhostd/node_modules/@modelcontextprotocol/server-everything/dist/docs/features.md")); err != nil {
		t.Errorf("install-layout.sh removed the documents server-everything serves as resources: %v", err)
	}
	return l
}

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// environ is the container's environment in the layout: the image's ENV
// with absolute paths mapped, PATH with the layout's /usr/local/bin and
// node, and extra (KEY=VALUE) on top.
func (l *layout) environ(im image, m mapping, extra ...string) []string {
	env := []string{
		"PATH=" + l.imagePath("/usr/local/bin") + ":" + l.nodeDir + ":/usr/bin:/bin",
		"HOME=" + l.imagePath("/var/lib/toolhostd"),
	}
	for _, kv := range im.env {
		v := kv[1]
		if filepath.IsAbs(v) {
			v = l.resolve(v, m)
		}
		env = append(env, kv[0]+"="+v)
	}
	return append(env, extra...)
}

// command is argv run in the container: argv[0] looked up in the
// environment's PATH, absolute arguments mapped, in the image's WORKDIR, as
// the image's user, in a process group of its own.
func (l *layout) command(t *testing.T, im image, m mapping, env []string, argv ...string) *exec.Cmd {
	t.Helper()
	name := argv[0]
	if !filepath.IsAbs(name) {
		for _, kv := range env {
			if p, ok := strings.CutPrefix(kv, "PATH="); ok {
				for _, d := range filepath.SplitList(p) {
					if fi, err := os.Stat(filepath.Join(d, name)); err == nil && fi.Mode().IsRegular() {
						name = filepath.Join(d, name)
						break
					}
				}
			}
		}
		if !filepath.IsAbs(name) {
			t.Fatalf("%s is not on the container's PATH", argv[0])
		}
	}
	args := slices.Clone(argv[1:])
	for i, a := range args {
		if filepath.IsAbs(a) {
			args[i] = l.resolve(a, m)
		}
	}
	cmd := exec.Command(name, args...)
	cmd.Env = env
	cmd.Dir = l.resolve(im.workdir, m)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: l.cred}
	return cmd
}

// syncBuffer collects a process's output for the test to read while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// daemon is a running `toolhostd serve` of the layout.
type daemon struct {
	l      *layout
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

func (l *layout) start(t *testing.T, cmd *exec.Cmd) *daemon {
	t.Helper()
	d := &daemon{l: l, cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = d.stderr, d.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.err = cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-d.done
		}
	})
	return d
}

// exited fails t if the daemon has stopped (it should be serving).
func (d *daemon) exited(t *testing.T) {
	t.Helper()
	select {
	case <-d.done:
		t.Fatalf("toolhostd exited: %v\n%s", d.err, d.stderr.String())
	default:
	}
}

// waitAgentsRunning polls list until every agent of want is listed and
// running, and no other agent is.
func (d *daemon) waitAgentsRunning(t *testing.T, want []string, list func(context.Context) ([]control.AgentStatus, error)) {
	t.Helper()
	var last []control.AgentStatus
	var lastErr error
	err := testenv.Poll(runningWithin, func() bool {
		d.exited(t)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		last, lastErr = list(ctx)
		cancel()
		if lastErr != nil {
			return false
		}
		var names []string
		running := true
		for _, a := range last {
			if a.State == "failed" || a.State == "exited" {
				t.Fatalf("agent %s %s: %s\n%s", a.Name, a.State, a.LastError, d.stderr.String())
			}
			names = append(names, a.Name)
			running = running && a.State == "running"
		}
		slices.Sort(names)
		return slices.Equal(names, want) && running
	})
	if err == nil {
		return
	}
	t.Fatalf("agents not all running within %v (want %v): %+v %v\n%s", runningWithin, want, last, lastErr, d.stderr.String())
}

// stop sends SIGTERM and checks the exit status 0 and that no process of
// the layout (the MCP servers' command lines name it) is left.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	d.exited(t)
	servers := 0
	for _, p := range processesUnder(d.l.root) {
		if strings.Contains(p, "/node_modules/@modelcontextprotocol/") {
			servers++
		}
	}
	if servers == 0 {
		t.Fatalf("no MCP server process of the layout is running: %v", processesUnder(d.l.root))
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.done:
	case <-time.After(stopWithin):
		t.Fatalf("toolhostd did not exit within %v of SIGTERM\n%s", stopWithin, d.stderr.String())
	}
	if d.err != nil {
		t.Fatalf("toolhostd after SIGTERM: %v (want exit status 0)\n%s", d.err, d.stderr.String())
	}
	if left := processesUnder(d.l.root); len(left) > 0 {
		t.Fatalf("processes left after toolhostd exited: %v\n%s", left, d.stderr.String())
	}
}

// processesUnder lists the processes whose command line names a path
// under dir.
func processesUnder(dir string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(dir+"/")) {
			continue
		}
		out = append(out, e.Name()+": "+strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " "))
	}
	return out
}

// agentNames are the [agent.*] names of a config.
func agentNames(t *testing.T, name, text string) []string {
	t.Helper()
	c, err := config.Parse(name, []byte(text))
	if err != nil {
		t.Fatalf("%s:\n%v", name, err)
	}
	var names []string
	for n := range c.Agent {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) == 0 {
		t.Fatalf("%s has no agents", name)
	}
	return names
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func token(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// httpStatus is the status of GET http://addr/path with an optional
// bearer token.
func httpStatus(addr, path, bearer string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return 0, err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// waitHTTP polls GET addr/path until it answers 200.
func (d *daemon) waitHTTP(t *testing.T, addr, path string) {
	t.Helper()
	var code int
	var err error
	if testenv.Poll(runningWithin, func() bool {
		d.exited(t)
		code, err = httpStatus(addr, path, "")
		return err == nil && code == http.StatusOK
	}) == nil {
		return
	}
	t.Fatalf("GET %s%s: %d %v\n%s", addr, path, code, err, d.stderr.String())
}

// checkImage checks what the layout test relies on and what the image
// promises: the exec forms, the non-root USER matching the useradd and the
// layout script's --owner, the compile cache volume, the control port.
func checkImage(t *testing.T, im image) {
	t.Helper()
	if len(im.entrypoint) == 0 || len(im.cmd) == 0 || len(im.healthcheck) == 0 || im.workdir == "" {
		t.Fatalf("Dockerfile: the final stage needs ENTRYPOINT, CMD, HEALTHCHECK and WORKDIR: %+v", im)
	}
	uid, _, _ := strings.Cut(im.user, ":")
	var layoutRun string
	for _, r := range im.runs {
		if strings.Contains(r, "deploy/container/install-layout.sh") {
			layoutRun = r
		}
	}
	if !strings.Contains(layoutRun, "--root / ") || !strings.Contains(layoutRun, "--owner "+im.user) {
		t.Errorf("Dockerfile: the final stage must run install-layout.sh with --root / and --owner %s: %q", im.user, layoutRun)
	}
	created := false
	for _, r := range im.runs {
		created = created || strings.Contains(r, "useradd") && strings.Contains(r, "--uid "+uid)
	}
	if !created {
		t.Errorf("Dockerfile: no useradd --uid %s for USER %s", uid, im.user)
	}
	cache := filepath.Join(envValue(t, im, "XDG_CACHE_HOME"), "toolhostd")
	if !slices.Contains(im.volumes, cache) {
		t.Errorf("Dockerfile: the compile cache %s is not a VOLUME: %v", cache, im.volumes)
	}
	if !slices.Contains(im.expose, "7070") {
		t.Errorf("Dockerfile: EXPOSE %v lacks the control port 7070", im.expose)
	}
}

func envValue(t *testing.T, im image, key string) string {
	t.Helper()
	for _, kv := range im.env {
		if kv[0] == key {
			return kv[1]
		}
	}
	t.Fatalf("Dockerfile: no ENV %s", key)
	return ""
}

// waitSocket waits for the control socket to answer.
func waitSocket(t *testing.T, d *daemon, socket string) *control.Client {
	t.Helper()
	var c *control.Client
	var err error
	if testenv.Poll(runningWithin, func() bool {
		d.exited(t)
		c, err = control.Dial(socket)
		return err == nil
	}) != nil {
		t.Fatalf("control socket %s: %v\n%s", socket, err, d.stderr.String())
	}
	return c
}

// waitReady waits for the daemon's /readyz to answer ready.
func waitReady(t *testing.T, d *daemon, c *control.Client) {
	t.Helper()
	var ok bool
	var err error
	if testenv.Poll(runningWithin, func() bool {
		d.exited(t)
		ok, err = c.Ready(context.Background())
		return ok
	}) != nil {
		t.Fatalf("/readyz: %v %v\n%s", ok, err, d.stderr.String())
	}
}

// checkJSONLog checks that every line of the daemon's stderr is a JSON
// object and that each agent logged something.
func checkJSONLog(t *testing.T, log string, agents []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line that is not JSON: %q (%v)", line, err)
		}
		if a, ok := rec["agent"].(string); ok {
			seen[a] = true
		}
	}
	for _, a := range agents {
		if !seen[a] {
			t.Errorf("no log line of agent %s:\n%s", a, log)
		}
	}
}

// checkCache checks that the daemon, as the image's user, wrote its
// compiled components into the cache volume.
func checkCache(t *testing.T, l *layout, xdg string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(filepath.Join(xdg, "toolhostd"), func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != l.uid {
			t.Errorf("%s is owned by uid %d, not the image's user %d", p, st.Uid, l.uid)
		}
		n++
		return nil
	})
	if err != nil || n == 0 {
		t.Errorf("no compiled components in the cache volume %s: %v", xdg, err)
	}
}
