// Package container holds the container image's own config and
// install-layout.sh, the script that lays out the image's filesystem (the
// Dockerfile runs it). Its test runs that script into a temporary root and
// runs toolhostd from it as the image and the Kubernetes manifests would:
// the Dockerfile's ENTRYPOINT, CMD, ENV, USER and HEALTHCHECK, and
// deploy/k8s's ConfigMap, args, env and probes, so that none of them can
// drift from the layout without a failing test.
package container

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// image is what the Dockerfile's final stage says about the running
// container.
type image struct {
	env         [][2]string // ENV, in order
	user        string      // USER
	workdir     string      // WORKDIR
	healthcheck []string    // HEALTHCHECK ... CMD [...]
	entrypoint  []string
	cmd         []string
	expose      []string
	volumes     []string
	runs        []string // RUN instructions
}

// instructions splits a Dockerfile into instructions: comments and blank
// lines dropped, continuation lines joined.
func instructions(text string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(text, "\n") {
		s := strings.TrimSpace(line)
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if more, ok := strings.CutSuffix(s, "\\"); ok {
			cur.WriteString(strings.TrimSpace(more))
			cur.WriteString(" ")
			continue
		}
		cur.WriteString(s)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

// parseDockerfile reads the final stage of the Dockerfile at path.
func parseDockerfile(t *testing.T, path string) image {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var im image
	jsonArray := func(kw, s string) []string {
		var v []string
		if err := json.Unmarshal([]byte(s), &v); err != nil || len(v) == 0 {
			t.Fatalf("Dockerfile: %s %s: want the exec form (a JSON array): %v", kw, s, err)
		}
		return v
	}
	for _, inst := range instructions(string(b)) {
		kw, rest, _ := strings.Cut(inst, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(kw) {
		case "FROM":
			im = image{} // only the last stage is the image
		case "ENV":
			for _, f := range strings.Fields(rest) {
				k, v, ok := strings.Cut(f, "=")
				if !ok {
					t.Fatalf("Dockerfile: ENV %s: want KEY=VALUE", rest)
				}
				im.env = append(im.env, [2]string{k, v})
			}
		case "USER":
			im.user = rest
		case "WORKDIR":
			im.workdir = rest
		case "HEALTHCHECK":
			_, c, ok := strings.Cut(rest, " CMD ")
			if !ok {
				t.Fatalf("Dockerfile: HEALTHCHECK %s: no CMD", rest)
			}
			im.healthcheck = jsonArray(kw, c)
		case "ENTRYPOINT":
			im.entrypoint = jsonArray(kw, rest)
		case "CMD":
			im.cmd = jsonArray(kw, rest)
		case "EXPOSE":
			im.expose = append(im.expose, strings.Fields(rest)...)
		case "VOLUME":
			im.volumes = append(im.volumes, jsonArray(kw, rest)...)
		case "RUN":
			im.runs = append(im.runs, rest)
		}
	}
	return im
}

func TestInstructions(t *testing.T) {
	got := instructions("# c\nFROM a AS b\n\nRUN x \\\n  # inner comment\n  && y\nENV A=1 \\\n    B=2\n")
	want := []string{"FROM a AS b", "RUN x && y", "ENV A=1 B=2"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("instructions = %q, want %q", got, want)
	}
}

// stage is one FROM ... of a Dockerfile and its instructions.
type stage struct {
	from  string   // the base image (or stage)
	name  string   // AS name; "" for the final stage
	insts []string // the instructions after FROM
}

// stages splits a Dockerfile into its stages.
func stages(t *testing.T, path string) []stage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []stage
	for _, inst := range instructions(string(b)) {
		kw, rest, _ := strings.Cut(inst, " ")
		if strings.EqualFold(kw, "FROM") {
			f := strings.Fields(rest)
			s := stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			out = append(out, s)
			continue
		}
		if len(out) == 0 {
			t.Fatalf("Dockerfile: %q before the first FROM", inst)
		}
		out[len(out)-1].insts = append(out[len(out)-1].insts, inst)
	}
	if len(out) == 0 {
		t.Fatal("Dockerfile: no FROM")
	}
	return out
}

// TestDockerfileBuild checks what the image build promises (issue 21):
// no frontend image to fetch, a supported Node LTS, the optional CA secret
// on each step that downloads, the final stage mounting only what the
// layout needs, no install scripts run, the agents in their smallest
// build, and the system's CA bundle in the image.
func TestDockerfileBuild(t *testing.T) {
	path := filepath.Join(testenv.Root(t), "Dockerfile")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(string(b), "\n"); strings.HasPrefix(strings.ReplaceAll(first, " ", ""), "#syntax=") {
		t.Errorf("Dockerfile: the first line %q makes BuildKit fetch a frontend image (no registry: no build); the built-in frontend handles RUN --mount", first)
	}
	all := stages(t, path)
	final := all[len(all)-1]
	for _, s := range all {
		if img, ok := strings.CutPrefix(s.from, "node:"); ok && img != "22-bookworm-slim" {
			t.Errorf("Dockerfile: FROM %s: want node:22-bookworm-slim (Node 20 is past its end of life)", s.from)
		}
	}
	if final.from != "node:22-bookworm-slim" {
		t.Errorf("Dockerfile: the final stage is FROM %s, want node:22-bookworm-slim", final.from)
	}
	downloads := 0
	for _, s := range all {
		for _, inst := range s.insts {
			kw, rest, _ := strings.Cut(inst, " ")
			if !strings.EqualFold(kw, "RUN") {
				continue
			}
			goDL := strings.Contains(rest, "go mod download")
			npmDL := strings.Contains(rest, "npm ci") || strings.Contains(rest, "npm install")
			if goDL || npmDL {
				downloads++
				if !strings.Contains(rest, "--mount=type=secret,id=ca") || !strings.Contains(rest, "if [ -s /run/secrets/ca ]; then export ") {
					t.Errorf("Dockerfile: %q downloads without the optional secret ca (--mount=type=secret,id=ca, used only when /run/secrets/ca is there)", rest)
				}
				if goDL && !strings.Contains(rest, "SSL_CERT_FILE=/run/secrets/ca") {
					t.Errorf("Dockerfile: %q: go wants the CA as SSL_CERT_FILE", rest)
				}
				if npmDL && !strings.Contains(rest, "NODE_EXTRA_CA_CERTS=/run/secrets/ca") {
					t.Errorf("Dockerfile: %q: npm wants the CA as NODE_EXTRA_CA_CERTS", rest)
				}
			} else if strings.Contains(rest, "id=ca") {
				t.Errorf("Dockerfile: %q mounts the secret ca but downloads nothing", rest)
			}
			if npmDL && !strings.Contains(rest, "--ignore-scripts") {
				t.Errorf("Dockerfile: %q runs install scripts (the pinned node devDependency's downloads a Node.js nobody runs)", rest)
			}
			if strings.Contains(rest, "componentize-js") {
				t.Errorf("Dockerfile: %q builds agents with componentize-js (12 MB each); the image ships the smallest build (componentize-qjs)", rest)
			}
		}
	}
	if downloads < 3 {
		t.Errorf("Dockerfile: %d RUN steps download (go mod download, npm ci); want the go modules, the agents' toolchain and the MCP servers", downloads)
	}
	certs, compiled := false, false
	for _, inst := range final.insts {
		kw, rest, _ := strings.Cut(inst, " ")
		switch strings.ToUpper(kw) {
		case "COPY", "ADD":
			certs = certs || strings.HasSuffix(rest, " /etc/ssl/certs/ca-certificates.crt")
			if !strings.Contains(rest, "--from=") {
				t.Errorf("Dockerfile: the final stage copies from the build context (%q): its layers change with files the image does not need", inst)
			}
		case "RUN":
			for _, m := range strings.Fields(rest) {
				if strings.HasPrefix(m, "--mount=type=bind") && !strings.Contains(m, "from=") && !strings.Contains(m, "source=") {
					t.Errorf("Dockerfile: %s binds the whole build context into the final stage (editing README.md would rerun it); bind only what the layout needs", m)
				}
			}
			compiled = compiled || strings.Contains(rest, "install-layout.sh")
		}
	}
	if !certs {
		t.Error("Dockerfile: the final stage has no /etc/ssl/certs/ca-certificates.crt (https:// toolings and OAuth servers fail with x509 errors)")
	}
	if !compiled {
		t.Error("Dockerfile: the final stage does not run install-layout.sh (which precompiles the agents)")
	}
}

var goBuildTags = regexp.MustCompile(`\bgo build\b.*?\s-tags[ =](\S+)`)

// imageBuildTags are the -tags of the Dockerfile's go build (none: nil).
func imageBuildTags(t *testing.T, path string) string {
	t.Helper()
	for _, s := range stages(t, path) {
		for _, inst := range s.insts {
			if m := goBuildTags.FindStringSubmatch(inst); m != nil {
				return m[1]
			}
		}
	}
	return ""
}

// checkMethodDeadCode fails when bin (not stripped) links text/template's
// evaluator: it calls reflect.Value.MethodByName, and once that is
// reachable the linker keeps every exported method of every type in the
// binary (grpc's golang.org/x/net/trace brought it in, 9 MB of the model
// SDKs' methods; the grpcnotrace tag leaves it out).
func checkMethodDeadCode(t *testing.T, gobin, bin string) {
	t.Helper()
	out, err := exec.Command(gobin, "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm %s: %v", bin, err)
	}
	if bytes.Contains(out, []byte(" text/template.(*state).evalField")) {
		t.Errorf("the image's toolhostd links text/template's evaluator (reflect.Value.MethodByName): the linker keeps every exported method; find who reaches it with go build -ldflags=-dumpdep")
	}
}
