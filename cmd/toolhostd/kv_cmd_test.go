package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/cluster/etcdtest"
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/control/controltest"
	"github.com/toolhostd/toolhostd/internal/kv"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// kvHost is a `toolhostd serve` subprocess with its control socket.
type kvHost struct {
	sock string
	proc *serveProc
}

// startKVHost serves a config of agent a (testdata/spin.wat) with extra
// appended, its control socket in dir, and waits until the socket answers.
func startKVHost(t *testing.T, dir, name, extra string) kvHost {
	t.Helper()
	spin, err := filepath.Abs(testdata("spin.wat"))
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, name+".sock")
	cfg := fmt.Sprintf("version = 1\n[host]\ncontrol_socket = %q\n%s\n[agent.a]\ncomponent = %q\nstop_grace = \"100ms\"\n",
		sock, extra, spin)
	p := startServe(t, writeConfigFile(t, dir, name+".toml", cfg))
	waitFor(t, 60*time.Second, func() bool {
		c, err := control.Dial(sock)
		if err != nil {
			return false
		}
		defer c.Close()
		return c.Health(t.Context()) == nil
	}, p.out)
	return kvHost{sock: sock, proc: p}
}

// kv runs `toolhostd kv ARGS --socket SOCK` with stdin.
func (h kvHost) kv(t *testing.T, stdin []byte, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := executeWithStdin(append(append([]string{"kv"}, args...), "--socket", h.sock), bytes.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// TestKVCommands drives a real daemon's key-value store with the kv
// commands (ls, get, put from an argument and from stdin, rm, export,
// import), checks their exit codes and errors and the store's metrics,
// and moves an export from bbolt into the cluster's etcd (an embedded
// one) and back out unchanged.
func TestKVCommands(t *testing.T) {
	noConfig(t)
	dir, err := os.MkdirTemp("", "kvcmd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	one := startKVHost(t, dir, "one", fmt.Sprintf("state_dir = %q\n", filepath.Join(dir, "state")))

	binary := []byte{0, 1, 2, 0xff, '\n', 'x'}
	steps := []struct {
		stdin      []byte
		args       []string
		code       int
		out, inErr string
	}{
		{nil, []string{"ls"}, 0, "", ""},
		{nil, []string{"put", "a", "notes", "k1", "v1"}, 0, "", ""},
		{binary, []string{"put", "a", "notes", "k2"}, 0, "", ""},
		{[]byte("[]"), []string{"put", "a", "session/s1", "turns", "-"}, 0, "", ""},
		{nil, []string{"put", "a", "notes", "a/b c", "slashed"}, 0, "", ""},
		{nil, []string{"put", "b", "notes", "k1", "b's own"}, 0, "", ""},
		{nil, []string{"ls"}, 0, "a\nb\n", ""},
		{nil, []string{"ls", "a"}, 0, "notes\nsession/s1\n", ""},
		{nil, []string{"ls", "a", "notes"}, 0, "a/b c\nk1\nk2\n", ""},
		{nil, []string{"ls", "a", "notes", "--prefix", "k"}, 0, "k1\nk2\n", ""},
		{nil, []string{"get", "a", "notes", "k1"}, 0, "v1", ""},
		{nil, []string{"get", "a", "notes", "k2"}, 0, string(binary), ""},
		{nil, []string{"get", "a", "notes", "a/b c"}, 0, "slashed", ""},
		{nil, []string{"get", "b", "notes", "k1"}, 0, "b's own", ""},
		{nil, []string{"get", "a", "session/s1", "turns"}, 0, "[]", ""},
		{nil, []string{"get", "a", "notes", "missing"}, 1, "", "no such key"},
		{nil, []string{"ls", "nobody"}, 1, "", "no such agent"},
		{nil, []string{"ls", "a"}, 0, "notes\nsession/s1\n", ""},
		{nil, []string{"get", "a", "notes"}, 64, "", "accepts 3 arg"},
		{nil, []string{"put", "a", "notes", "x", "scratch"}, 0, "", ""},
		{nil, []string{"rm", "a", "notes", "x"}, 0, "", ""},
		{nil, []string{"rm", "a", "notes", "x"}, 0, "", ""},
		{nil, []string{"get", "a", "notes", "x"}, 1, "", "no such key"},
	}
	for _, s := range steps {
		code, out, errOut := one.kv(t, s.stdin, s.args...)
		if code != s.code || out != s.out || !strings.Contains(errOut, s.inErr) {
			t.Fatalf("kv %s: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr with %q",
				strings.Join(s.args, " "), code, out, errOut, s.code, s.out, s.inErr)
		}
	}

	code, export, errOut := one.kv(t, nil, "export")
	if code != 0 {
		t.Fatalf("kv export: exit %d, stderr %q", code, errOut)
	}
	var recs []kv.Record
	for _, line := range strings.Split(strings.TrimSuffix(export, "\n"), "\n") {
		var r kv.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	want := []kv.Record{
		{Agent: "a", Bucket: "notes", Key: "a/b c", Value: []byte("slashed")},
		{Agent: "a", Bucket: "notes", Key: "k1", Value: []byte("v1")},
		{Agent: "a", Bucket: "notes", Key: "k2", Value: binary},
		{Agent: "a", Bucket: "session/s1", Key: "turns", Value: []byte("[]")},
		{Agent: "b", Bucket: "notes", Key: "k1", Value: []byte("b's own")},
	}
	if fmt.Sprint(recs) != fmt.Sprint(want) {
		t.Fatalf("kv export:\n%s\nwant the records %v", export, want)
	}
	if !strings.Contains(export, `"value":"AAEC/wp4"`) {
		t.Errorf("the export's values are not base64:\n%s", export)
	}
	if code, out, _ := one.kv(t, nil, "export", "a", "session/s1"); code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"key":"turns"`) {
		t.Errorf("kv export a session/s1: exit %d, %q", code, out)
	}

	// The metrics: what each agent keeps, the operators' operations.
	c, err := control.Dial(one.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := c.Metrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		`toolhostd_kv_keys{agent="a"} 4`,
		`toolhostd_kv_keys{agent="b"} 1`,
		fmt.Sprintf(`toolhostd_kv_bytes{agent="b"} %d`, len("k1")+len("b's own")),
		`toolhostd_kv_operations_total{op="admin",outcome="ok"}`,
	} {
		if !strings.Contains(string(m), w) {
			t.Errorf("/metrics has no %s", w)
		}
	}

	// Into the other backend: a host of a cluster keeps its store in etcd.
	e := etcdtest.Start(t, 1)
	eps, _ := json.Marshal(e.Endpoints())
	two := startKVHost(t, dir, "two", fmt.Sprintf("state_dir = %q\n\n[cluster]\nname = \"two\"\netcd = { endpoints = %s }\n", filepath.Join(dir, "state2"), eps))
	if code, out, errOut := two.kv(t, []byte(export), "import"); code != 0 || out != "imported 5 keys\n" {
		t.Fatalf("kv import into etcd: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "state2", "kv.db")); err == nil {
		t.Error("the cluster host made a bbolt store")
	}
	code, again, errOut := two.kv(t, nil, "export")
	if code != 0 || again != export {
		t.Fatalf("the export of the etcd store (exit %d, stderr %q):\n%s\nwant the bbolt one:\n%s", code, errOut, again, export)
	}
	if code, out, _ := two.kv(t, nil, "get", "a", "notes", "k2"); code != 0 || out != string(binary) {
		t.Errorf("kv get from etcd: exit %d, %q", code, out)
	}
	// A value past the etcd backend's limit is refused naming it.
	big := bytes.Repeat([]byte("x"), kv.MaxEtcdValue+1)
	if code, _, errOut := two.kv(t, big, "put", "a", "notes", "big", "-"); code != 1 || !strings.Contains(errOut, "limit is 1048576 bytes (1 MiB)") {
		t.Errorf("kv put of 1 MiB + 1 into etcd: exit %d, stderr %q", code, errOut)
	}
	// A bad import line is named, and the lines before it are written.
	bad := `{"agent":"a","bucket":"notes","key":"first","value":"eA=="}` + "\nnot json\n"
	if code, _, errOut := two.kv(t, []byte(bad), "import"); code != 1 || !strings.Contains(errOut, "import line 2") || !strings.Contains(errOut, "1 keys written before it") {
		t.Errorf("kv import of a bad line: exit %d, stderr %q", code, errOut)
	}
	// The commands docs/keyvalue.md shows, as it shows them.
	runDocCommands(t, two, dir)
	if code, out, _ := two.kv(t, nil, "get", "a", "notes", "k2"); code != 0 || out != string(binary) {
		t.Errorf("after the docs' commands (which rm k1 only), kv get a notes k2: exit %d, %q", code, out)
	}
}

// runDocCommands runs the sh block of docs/keyvalue.md's "## Operators"
// against h: each `toolhostd kv` line with its placeholders given values
// (AGENT a, BUCKET notes, KEY k1, VALUE, P k) and its redirections to and
// from a file in dir; each must succeed, and print what its "prints:"
// comment says (N standing for a number).
func runDocCommands(t *testing.T, h kvHost, dir string) {
	t.Helper()
	blocks := docBlocks(t, filepath.Join("docs", "keyvalue.md"), "## Operators")
	if len(blocks["sh"]) != 1 {
		t.Fatalf("docs/keyvalue.md's operators: want one sh block, have %d", len(blocks["sh"]))
	}
	values := map[string]string{"AGENT": "a", "BUCKET": "notes", "KEY": "k1", "VALUE": "from the docs", "P": "k"}
	ran := 0
	for _, line := range strings.Split(blocks["sh"][0], "\n") {
		cmd, comment, _ := strings.Cut(line, "#")
		f := strings.Fields(cmd)
		if len(f) == 0 {
			continue
		}
		if len(f) < 2 || f[0] != "toolhostd" || f[1] != "kv" {
			t.Fatalf("docs/keyvalue.md: %q is not a toolhostd kv command", line)
		}
		var args []string
		var stdin []byte
		var stdout string
		for i := 2; i < len(f); i++ {
			switch a := f[i]; {
			case a == ">" || a == "<":
				i++
				path := filepath.Join(dir, f[i])
				if a == ">" {
					stdout = path
					continue
				}
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				stdin = b
			case values[a] != "":
				args = append(args, values[a])
			default:
				args = append(args, a)
			}
		}
		code, out, errOut := h.kv(t, stdin, args...)
		if code != 0 {
			t.Fatalf("docs/keyvalue.md: %s: exit %d, stderr %q", line, code, errOut)
		}
		if stdout != "" {
			if err := os.WriteFile(stdout, []byte(out), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if want, ok := strings.CutPrefix(strings.TrimSpace(comment), "prints: "); ok {
			pattern := "^" + strings.ReplaceAll(regexp.QuoteMeta(want), "N", "[0-9]+") + "\n$"
			if !regexp.MustCompile(pattern).MatchString(out) {
				t.Errorf("docs/keyvalue.md: %s: stdout %q, the doc says %q", line, out, want)
			}
		}
		ran++
	}
	if ran != 8 {
		t.Errorf("ran %d of docs/keyvalue.md's kv commands, want 8", ran)
	}
}

// TestREADMEKeyValue: the README's "Agents that remember" shows a short
// guest that imports what the WIT declares, and config lines that mean
// what its comments say.
func TestREADMEKeyValue(t *testing.T) {
	blocks := docBlocks(t, "README.md", "## Agents that remember")
	if len(blocks["js"]) != 1 || len(blocks["toml"]) != 1 {
		t.Fatalf("README.md's key-value section: want one js and one toml block, have %d, %d", len(blocks["js"]), len(blocks["toml"]))
	}
	js := blocks["js"][0]
	if lines := strings.Count(js, "\n"); lines > 12 {
		t.Errorf("README.md's key-value guest has %d lines; the front door shows a short one", lines)
	}
	root := testenv.Root(t)
	for _, m := range regexp.MustCompile(`import \{ (\w+) \} from 'wasi:keyvalue/(\w+)@0\.2\.0-draft2'`).FindAllStringSubmatch(js, -1) {
		file := map[string]string{"store": "store.wit", "atomics": "atomic.wit", "batch": "batch.wit"}[m[2]]
		wit, err := os.ReadFile(filepath.Join(root, "wit", "deps", "keyvalue", file))
		if err != nil {
			t.Fatalf("import from wasi:keyvalue/%s: %v", m[2], err)
		}
		if !regexp.MustCompile(`(?m)^\s*`+m[1]+`: func`).Match(wit) || !strings.Contains(string(wit), "interface "+m[2]+" {") {
			t.Errorf("README.md imports %s from wasi:keyvalue/%s, which wit/deps/keyvalue/%s does not declare", m[1], m[2], file)
		}
	}
	if n := strings.Count(js, "wasi:keyvalue/"); n != 2 {
		t.Errorf("README.md's guest has %d wasi:keyvalue imports, the check above matched a different shape", n)
	}
	c, err := config.Parse("README.md", []byte("version = 1\n"+blocks["toml"][0]))
	if err != nil {
		t.Fatalf("README.md's key-value config: %v", err)
	}
	a := c.Agent["notes"]
	if a == nil {
		t.Fatal("README.md's key-value config has no [agent.notes]")
	}
	p := kv.PolicyOf(a)
	if fmt.Sprint(p.Stores) != "[notes session]" || p.Quota.MaxKeys != 10000 || p.Quota.MaxBytes != 64<<20 {
		t.Errorf("README.md's key-value config is the policy %+v", p)
	}
}

// TestServeStoreCorrupt: serve on a state directory whose kv.db is not a
// bbolt file exits 2 at once, naming the file and what to do.
func TestServeStoreCorrupt(t *testing.T) {
	noConfig(t)
	dir, err := os.MkdirTemp("", "kvbad")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(state, "kv.db")
	if err := os.WriteFile(db, bytes.Repeat([]byte("not bbolt "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	p := writeConfigFile(t, dir, "toolhostd.toml", fmt.Sprintf("version = 1\n[host]\ncontrol_socket = %q\nstate_dir = %q\n",
		filepath.Join(dir, "ctl.sock"), state))
	code, _, stderr := runCLI(t, "--config", p, "serve")
	if code != exitHost || !strings.Contains(stderr, "key-value store "+db+" is corrupt or not a bbolt file: move it away") {
		t.Errorf("serve on a corrupt store: exit %d, stderr %q", code, stderr)
	}
}

// TestKVLsPages: kv ls AGENT BUCKET follows the cursor through every page
// of a bucket's keys (the store's pages hold 2 keys here), and --prefix
// narrows every page.
func TestKVLsPages(t *testing.T) {
	noConfig(t)
	st, err := kv.OpenBolt(filepath.Join(t.TempDir(), "kv.db"), kv.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := kv.New(st, kv.Options{PageSize: 2})
	keys := []string{"k1", "k2", "k3", "k4", "k5", "x1", "x2"}
	for _, k := range keys {
		if err := svc.Put(t.Context(), kv.Ref{Agent: "a", Bucket: "notes"}, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	h := kvHost{sock: controltest.Serve(t, control.Options{Backend: controltest.NewBackend(), KV: svc}).Socket()}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ls", "a", "notes"}, strings.Join(keys, "\n") + "\n"},
		{[]string{"ls", "a", "notes", "--prefix", "k"}, "k1\nk2\nk3\nk4\nk5\n"},
	} {
		if code, out, errOut := h.kv(t, nil, tc.args...); code != 0 || out != tc.want {
			t.Errorf("kv %s: exit %d, stdout %q, stderr %q; want %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}
}
