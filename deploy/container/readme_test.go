package container

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// readme is the container section of docs/deploying.md: its shell lines
// and its TOML example (the my.toml the commands mount).
type readme struct {
	sh   []string
	toml string
}

func readContainerSection(t *testing.T, repo string) readme {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, "docs", "deploying.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## The container\n")
	if !ok {
		t.Fatal("docs/deploying.md has no section ## The container")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	var r readme
	var block []string
	lang := ""
	for _, line := range strings.Split(sec, "\n") {
		switch {
		case lang == "" && strings.HasPrefix(line, "```"):
			lang, block = strings.TrimPrefix(line, "```"), nil
		case lang != "" && line == "```":
			switch lang {
			case "sh":
				r.sh = append(r.sh, block...)
			case "toml":
				if r.toml != "" {
					t.Fatal("the container section of docs/deploying.md has more than one TOML example")
				}
				r.toml = strings.Join(block, "\n") + "\n"
			}
			lang = ""
		case lang != "":
			if s := strings.TrimSpace(line); s != "" {
				block = append(block, s)
			}
		}
	}
	if len(r.sh) == 0 || r.toml == "" {
		t.Fatalf("the container section of docs/deploying.md needs sh commands and a TOML example: %+v", r)
	}
	return r
}

// shellFields splits a command line as sh would for the docs' simple
// lines: double quotes, $NAME expanded from vars, a trailing # comment.
func shellFields(t *testing.T, line string, vars map[string]string) []string {
	t.Helper()
	var out []string
	var cur strings.Builder
	inQuote, inWord := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '"':
			inQuote, inWord = !inQuote, true
		case c == '$':
			j := i + 1
			for j < len(line) && (line[j] == '_' || line[j] >= 'A' && line[j] <= 'Z' || line[j] >= 'a' && line[j] <= 'z' || line[j] >= '0' && line[j] <= '9') {
				j++
			}
			v, ok := vars[line[i+1:j]]
			if !ok {
				t.Fatalf("docs/deploying.md: %q: $%s is not set by the section's commands", line, line[i+1:j])
			}
			cur.WriteString(v)
			i, inWord = j-1, true
		case (c == ' ' || c == '\t') && !inQuote:
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '#' && !inQuote && !inWord:
			i = len(line)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inQuote {
		t.Fatalf("docs/deploying.md: %q: unterminated quote", line)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// container is one emulated `docker run`: its mounts, env and arguments.
type container struct {
	line    string
	name    string
	m       mapping
	env     []string
	argv    []string
	config  string            // the config file in effect (image path)
	tcp     string            // the control API's TCP address, if published
	ports   map[string]string // published host port -> the address standing in for it
	d       *daemon
	agents  []string
	control *control.Client
}

// parseRun reads `docker run [flags] toolhostd [args]` the way Docker
// would apply it to the layout. Flags the emulation does not know fail t:
// the docs may show only what this test runs.
func parseRun(t *testing.T, l *layout, im image, line string, f []string, pwdMounts map[string]bool) *container {
	t.Helper()
	c := &container{line: line, m: mapping{}, ports: map[string]string{}}
	published := map[string]string{} // container port -> host port
	var extra []string
	i := 2
	for ; i < len(f) && strings.HasPrefix(f[i], "-"); i++ {
		flag := f[i]
		if flag == "--rm" || flag == "-d" {
			continue
		}
		if i+1 >= len(f) {
			t.Fatalf("docs/deploying.md: %q: %s needs a value", line, flag)
		}
		i++
		v := f[i]
		switch flag {
		case "--name":
			c.name = v
		case "-e":
			if !strings.Contains(v, "=") {
				t.Fatalf("docs/deploying.md: %q: -e %s: want KEY=VALUE", line, v)
			}
			extra = append(extra, v)
		case "-p":
			host, ctr, ok := strings.Cut(v, ":")
			if !ok || !slices.Contains(im.expose, ctr) {
				t.Fatalf("docs/deploying.md: %q: -p %s: want HOST:PORT with a port the image EXPOSEs (%v)", line, v, im.expose)
			}
			published[ctr] = host
		case "-v":
			parts := strings.Split(v, ":")
			if len(parts) < 2 || len(parts) > 3 || len(parts) == 3 && parts[2] != "ro" || !filepath.IsAbs(parts[1]) {
				t.Fatalf("docs/deploying.md: %q: -v %s: want SRC:DST[:ro]", line, v)
			}
			src, dst := parts[0], parts[1]
			switch {
			case filepath.IsAbs(src):
				if _, err := os.Stat(src); err != nil {
					t.Fatalf("docs/deploying.md: %q: -v %s: %v", line, v, err)
				}
				pwdMounts[src] = true
				c.m[dst] = src
			case dst == filepath.Join(envValue(t, im, "XDG_CACHE_HOME"), "toolhostd") && slices.Contains(im.volumes, dst):
				// A named volume on the image's cache VOLUME: the
				// layout's cache, as a later container would find it.
				c.m[dst] = l.imagePath(dst)
			default:
				t.Fatalf("docs/deploying.md: %q: -v %s: a named volume the test does not emulate", line, v)
			}
		default:
			t.Fatalf("docs/deploying.md: %q: the layout test does not emulate docker run %s", line, flag)
		}
	}
	if i >= len(f) || f[i] != "toolhostd" {
		t.Fatalf("docs/deploying.md: %q: want the image toolhostd (docker build -t toolhostd .)", line)
	}
	args := f[i+1:]
	if len(args) == 0 {
		args = im.cmd
	}
	args = slices.Clone(args)
	for j, a := range args {
		for ctr, host := range published {
			if a == "0.0.0.0:"+ctr {
				// Listen on a free loopback port, standing in for the
				// published one.
				c.tcp = freeAddr(t)
				c.ports[host] = c.tcp
				args[j] = c.tcp
			}
		}
	}
	c.argv = slices.Concat(im.entrypoint, args)
	c.config = envValue(t, im, "TOOLHOSTD_CONFIG")
	for _, kv := range extra {
		if v, ok := strings.CutPrefix(kv, "TOOLHOSTD_CONFIG="); ok {
			c.config = v
		}
	}
	if j := slices.Index(args, "--config"); j >= 0 && j+1 < len(args) {
		c.config = args[j+1]
	}
	c.env = extra
	return c
}

// start writes the config in effect with its paths mapped (the mounted or
// the image's file stays as shipped) and runs the container's command.
func (c *container) start(t *testing.T, l *layout, im image) {
	t.Helper()
	src := l.resolve(c.config, c.m)
	text, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("%q: the config %s: %v", c.line, c.config, err)
	}
	if _, err := config.Parse(c.config, text); err != nil {
		t.Fatalf("%q: the config %s:\n%v", c.line, c.config, err)
	}
	c.agents = agentNames(t, c.config, string(text))
	// Beside the layout: readable by the image's user.
	f, err := os.CreateTemp(filepath.Dir(l.root), "config-*.toml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(l.rewrite(string(text), c.m))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	c.m[c.config] = f.Name()
	c.env = l.environ(im, c.m, c.env...)
	c.d = l.start(t, l.command(t, im, c.m, c.env, c.argv...))

	var sock string
	for _, kv := range c.env {
		if v, ok := strings.CutPrefix(kv, "RUNTIME_DIRECTORY="); ok {
			sock = filepath.Join(v, control.SocketName)
		}
	}
	c.control = waitSocket(t, c.d, sock)
	t.Cleanup(func() { c.control.Close() })
	waitReady(t, c.d, c.control)
	c.d.waitAgentsRunning(t, c.agents, c.control.Agents)
	if c.tcp != "" {
		c.d.waitHTTP(t, c.tcp, "/readyz")
		if code, err := httpStatus(c.tcp, "/v1/agents", ""); err != nil || code != http.StatusUnauthorized {
			t.Errorf("%q: GET /v1/agents without the token: %d %v, want 401", c.line, code, err)
		}
	}
}

// exec runs `docker exec NAME cmd...` in the container: as its user, with
// its env, in its WORKDIR. `toolhostd ps` must list every agent running.
func (c *container) exec(t *testing.T, l *layout, im image, line string, f []string) {
	t.Helper()
	if len(f) < 4 || f[2] != c.name {
		t.Fatalf("docs/deploying.md: %q: docker exec NAME CMD..., NAME the running container's --name (%q)", line, c.name)
	}
	cmd := l.command(t, im, c.m, c.env, f[3:]...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%q: %v\n%s", line, err, out)
	}
	if slices.Equal(f[3:], []string{"toolhostd", "ps"}) {
		for _, a := range c.agents {
			if !strings.Contains(string(out), a+" ") || !strings.Contains(string(out), "running") {
				t.Errorf("%q: agent %s not listed running:\n%s", line, a, out)
			}
		}
	}
}

// curl runs `curl [-H HEADER] URL` against the published port.
func (c *container) curl(t *testing.T, line string, f []string) {
	t.Helper()
	var headers []string
	url := ""
	for i := 1; i < len(f); i++ {
		switch {
		case f[i] == "-H" && i+1 < len(f):
			headers = append(headers, f[i+1])
			i++
		case strings.HasPrefix(f[i], "http://") && url == "":
			url = f[i]
		default:
			t.Fatalf("docs/deploying.md: %q: the layout test does not emulate curl %s", line, f[i])
		}
	}
	rest, ok := strings.CutPrefix(url, "http://localhost:")
	port, path, _ := strings.Cut(rest, "/")
	addr := c.ports[port]
	if !ok || addr == "" {
		t.Fatalf("docs/deploying.md: %q: want http://localhost:PORT/... with a port the last docker run published", line)
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+addr+"/"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%q: %s", line, resp.Status)
	}
}

// stop runs the HEALTHCHECK in the container, then stops it as docker stop
// would and checks what it left.
func (c *container) stop(t *testing.T, l *layout, im image) {
	t.Helper()
	hc := l.command(t, im, c.m, c.env, im.healthcheck...)
	if out, err := hc.CombinedOutput(); err != nil {
		t.Fatalf("HEALTHCHECK %v: %v\n%s", im.healthcheck, err, out)
	}
	c.d.stop(t)
	checkJSONLog(t, c.d.stderr.String(), c.agents)
}

// TestLayout lays the image out in a temporary root with install-layout.sh
// and runs there, as the container would, every command of docs/deploying.md's
// container section (each docker run with the exec and curl lines after
// it), then deploy/k8s's Deployment against the same layout.
func TestLayout(t *testing.T) {
	repo := testenv.Root(t)
	im := parseDockerfile(t, filepath.Join(repo, "Dockerfile"))
	checkImage(t, im)
	doc := readContainerSection(t, repo)
	checkDockerfileComments(t, repo, doc)
	l := newLayout(t, im)

	shipped, err := os.ReadFile(filepath.Join(repo, "deploy", "container", "toolhostd.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := l.imagePath(envValue(t, im, "TOOLHOSTD_CONFIG"))
	if installed, err := os.ReadFile(cfgPath); err != nil || string(installed) != string(shipped) {
		t.Fatalf("the layout's %s is not deploy/container/toolhostd.toml: %v", cfgPath, err)
	}
	// The config as shipped, with the image's paths: valid for toolhostd
	// itself (its components are at those paths in the image, not here).
	if out, err := exec.Command(l.imagePath("/usr/local/bin/toolhostd"), "config", "validate", "--no-files", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("toolhostd config validate %s: %v\n%s", cfgPath, err, out)
	}

	// The user's working directory: the docs' my.toml and the agents of
	// make agents in build/agents.
	pwd := filepath.Join(filepath.Dir(l.root), "pwd")
	agentsDir := filepath.Join(pwd, "build", "agents")
	if err := os.MkdirAll(agentsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pwd, "my.toml"), []byte(doc.toml), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"hello", "fanout", "watch"} {
		b, err := os.ReadFile(testenv.Agent(t, "agents", w))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(agentsDir, w+".wasm"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	vars := map[string]string{"PWD": pwd}
	for _, line := range doc.sh {
		if name, v, ok := strings.Cut(line, "="); ok && !strings.Contains(name, " ") {
			if v != "$(openssl rand -hex 32)" {
				t.Fatalf("docs/deploying.md: %q: the test makes up only $(openssl rand -hex 32)", line)
			}
			vars[name] = token(t)
		}
	}

	// Group the lines: each docker run with the lines up to the next one.
	var groups [][]string
	for _, line := range doc.sh {
		switch {
		case strings.HasPrefix(line, "docker run "):
			groups = append(groups, []string{line})
		case strings.HasPrefix(line, "docker exec "), strings.HasPrefix(line, "curl "):
			if len(groups) == 0 {
				t.Fatalf("docs/deploying.md: %q before any docker run", line)
			}
			groups[len(groups)-1] = append(groups[len(groups)-1], line)
		case strings.Contains(line, "="):
		default:
			t.Fatalf("docs/deploying.md: %q: the layout test does not emulate this command", line)
		}
	}
	pwdMounts := map[string]bool{}
	for i, g := range groups {
		t.Run(fmt.Sprintf("docker run %d", i+1), func(t *testing.T) {
			t.Log(g[0])
			c := parseRun(t, l, im, g[0], shellFields(t, g[0], vars), pwdMounts)
			c.start(t, l, im)
			for _, line := range g[1:] {
				f := shellFields(t, line, vars)
				if f[0] == "curl" {
					c.curl(t, line, f)
				} else {
					c.exec(t, l, im, line, f)
				}
			}
			c.stop(t, l, im)
			if i == 0 {
				checkCache(t, l, l.imagePath(envValue(t, im, "XDG_CACHE_HOME")))
				// The image's own agents come precompiled.
				if log := c.d.stderr.String(); strings.Contains(log, `"msg":"compiling `) {
					t.Errorf("the first start compiled the image's agents (install-layout.sh precompiles them):\n%s", log)
				}
			}
		})
	}
	for _, want := range []string{filepath.Join(pwd, "my.toml"), agentsDir} {
		if !pwdMounts[want] {
			t.Errorf("docs/deploying.md: no docker run mounts %s (your own config and agents)", want)
		}
	}

	t.Run("kubernetes", func(t *testing.T) { runKubernetes(t, l, im) })
}

// checkDockerfileComments: the Dockerfile's comments show docs/deploying.md's
// commands, word for word.
func checkDockerfileComments(t *testing.T, repo string, doc readme) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, line := range strings.Split(string(b), "\n") {
		if cmd, ok := strings.CutPrefix(line, "#   "); ok && !strings.Contains(cmd, "docker build ") {
			shown = append(shown, strings.TrimSpace(cmd))
		}
	}
	if !slices.Equal(shown, doc.sh) {
		t.Errorf("the Dockerfile's comments show\n  %s\nthe container section of docs/deploying.md\n  %s", strings.Join(shown, "\n  "), strings.Join(doc.sh, "\n  "))
	}
}
