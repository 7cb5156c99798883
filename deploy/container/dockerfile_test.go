// Package container holds the container image's own config and
// install-layout.sh, the script that lays out the image's filesystem (the
// Dockerfile runs it). Its test runs that script into a temporary root and
// runs toolhostd from it as the image and the Kubernetes manifests would:
// the Dockerfile's ENTRYPOINT, CMD, ENV, USER and HEALTHCHECK, and
// deploy/k8s's ConfigMap, args, env and probes, so that none of them can
// drift from the layout without a failing test.
package container

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
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
