package agentbuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolhostd/toolhostd/wit"
)

// Toolchains are the names --toolchain takes for a JS agent; the first is
// the default.
var Toolchains = []string{ToolchainQJS, ToolchainSpiderMonkey}

// Options say what Build builds.
type Options struct {
	// Path is a JS file (.js, .mjs), a directory with an agent.js, or the
	// directory of a Go main package.
	Path string
	// Out is the component to write, or a directory to write it into;
	// default: beside Path, named after the JS file or the directory
	// (hello.js -> hello.wasm, ./hello -> ./hello/hello.wasm).
	Out string
	// Toolchain builds a JS agent: "qjs" (componentize-qjs, the default) or
	// "spidermonkey" (componentize-js). A Go agent takes "" or "go".
	Toolchain string
	// CacheRoot holds the npm toolchain and the Go module proxy; default
	// CacheRoot().
	CacheRoot string
	// Progress gets a line before a long first step (the npm install).
	Progress io.Writer
}

// Result is what Build made.
type Result struct {
	Out       string // the component written
	Lang      string // "js" or "go"
	Toolchain string // "componentize-qjs", "componentize-js" or "go"
	Size      int64
	Elapsed   time.Duration
}

// An InputError is a Build whose Path or Toolchain cannot be built (a
// usage error): not a build that failed.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErrorf(format string, args ...any) error {
	return &InputError{Err: fmt.Errorf(format, args...)}
}

// A source is what Path turned out to be.
type source struct {
	lang string // "js" or "go"
	path string // the JS file, or the Go package directory
	name string // the default output's base name
}

func resolve(path string) (source, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return source{}, inputErrorf("%s: no such file or directory (give a JS file, or a directory with an agent.js or a Go main package)", path)
		}
		return source{}, err
	}
	if !fi.IsDir() {
		switch ext := filepath.Ext(path); ext {
		case ".js", ".mjs":
			return source{lang: "js", path: path, name: strings.TrimSuffix(filepath.Base(path), ext)}, nil
		case ".go":
			return source{}, inputErrorf("%s: give the Go main package's directory (%s), not one of its files", path, filepath.Dir(path))
		default:
			return source{}, inputErrorf("%s: not a JS file (.js, .mjs) or a directory (an agent.js, or a Go main package)", path)
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return source{}, err
	}
	name := filepath.Base(abs)
	if goFiles, _ := filepath.Glob(filepath.Join(path, "*.go")); len(goFiles) > 0 {
		return source{lang: "go", path: path, name: name}, nil
	}
	if js := filepath.Join(path, "agent.js"); isFile(js) {
		return source{lang: "js", path: js, name: name}, nil
	}
	return source{}, inputErrorf("%s: a directory with no .go files and no agent.js (give a JS file, or a directory with an agent.js or a Go main package)", path)
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// Build turns opts.Path into a component against the embedded WIT.
func Build(ctx context.Context, opts Options) (*Result, error) {
	start := time.Now()
	src, err := resolve(opts.Path)
	if err != nil {
		return nil, err
	}
	switch {
	case src.lang == "js" && opts.Toolchain == "":
		opts.Toolchain = Toolchains[0]
	case src.lang == "js" && !slices.Contains(Toolchains, opts.Toolchain):
		return nil, inputErrorf("toolchain %q: a JS agent is built with %s", opts.Toolchain, strings.Join(Toolchains, " or "))
	case src.lang == "go" && opts.Toolchain != "" && opts.Toolchain != "go":
		return nil, inputErrorf("toolchain %q: %s is a Go package, built with go (--toolchain is for JS agents)", opts.Toolchain, src.path)
	}
	out := opts.Out
	switch fi, err := os.Stat(out); {
	case out == "" && src.lang == "go":
		out = filepath.Join(src.path, src.name+".wasm")
	case out == "":
		out = filepath.Join(filepath.Dir(src.path), src.name+".wasm")
	case err == nil && fi.IsDir():
		out = filepath.Join(out, src.name+".wasm")
	}
	if opts.CacheRoot == "" {
		if opts.CacheRoot, err = CacheRoot(); err != nil {
			return nil, err
		}
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	work, err := os.MkdirTemp("", "toolhostd-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	// agent.wit and its deps (wasi:keyvalue): the JS toolchains read the
	// directory, componentize-go.mjs the file with the deps beside it.
	witDir := filepath.Join(work, "wit")
	if err := wit.WriteDir(witDir); err != nil {
		return nil, err
	}
	witFile := filepath.Join(witDir, "agent.wit")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	// The toolchain writes into the work directory; the component is moved
	// over out when it is whole: a failed build leaves the previous one.
	partial := filepath.Join(work, src.name+".wasm")

	res := &Result{Out: out, Lang: src.lang}
	switch src.lang {
	case "go":
		res.Toolchain = "go"
		err = buildGo(ctx, opts, src, work, witFile, partial)
	default:
		var tc *toolchain
		if tc, err = ensureToolchain(ctx, opts.CacheRoot, opts.Toolchain, opts.Progress); err == nil {
			res.Toolchain, err = buildJS(ctx, tc, opts.Toolchain, src.path, witDir, partial)
		}
	}
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("build of %s interrupted (%v)", opts.Path, ctx.Err())
	}
	if err != nil {
		return nil, err
	}
	if err := moveFile(partial, out); err != nil {
		return nil, err
	}
	fi, err := os.Stat(out)
	if err != nil {
		return nil, err
	}
	res.Size, res.Elapsed = fi.Size(), time.Since(start)
	return res, nil
}

func buildJS(ctx context.Context, tc *toolchain, which, file, witDir, out string) (string, error) {
	var name string
	var args []string
	switch which {
	case ToolchainQJS:
		bin, err := tc.bin("componentize-qjs", "componentize-qjs")
		if err != nil {
			return "", err
		}
		// --sync: without it the component needs component-model async.
		name, args = "componentize-qjs", []string{bin, "--wit", witDir, "--js", file, "-n", "agent", "--sync", "-o", out}
	case ToolchainSpiderMonkey:
		bin, err := tc.bin("@bytecodealliance/componentize-js", "componentize-js")
		if err != nil {
			return "", err
		}
		name, args = "componentize-js", []string{bin, file, "--wit", witDir, "--world-name", "agent", "-d", "http", "fetch-event", "-o", out}
	}
	if err := run(ctx, "", nil, tc.node, args...); err != nil {
		return "", fmt.Errorf("%s %s: %w", name, file, err)
	}
	if !isFile(out) {
		return "", fmt.Errorf("%s %s wrote no component", name, file)
	}
	return name, nil
}

func buildGo(ctx context.Context, opts Options, src source, work, witFile, out string) error {
	gobin, err := lookPath("go", "building a Go agent needs Go 1.26 or later (https://go.dev/dl)")
	if err != nil {
		return err
	}
	tc, err := ensureToolchain(ctx, opts.CacheRoot, ToolchainGo, opts.Progress)
	if err != nil {
		return err
	}
	env, err := goEnv(ctx, gobin, opts.CacheRoot)
	if err != nil {
		return err
	}
	core := filepath.Join(work, "core.wasm")
	if err := run(ctx, src.path, env, gobin, "build", "-buildmode=c-shared", "-o", core, "."); err != nil {
		return fmt.Errorf("go build (GOOS=wasip1 GOARCH=wasm) %s: %w", src.path, err)
	}
	script := filepath.Join(tc.dir, "componentize-go.mjs")
	if err := run(ctx, "", nil, tc.node, script, "--wit", witFile, "--world", "agent", core, out); err != nil {
		return fmt.Errorf("componentize %s: %w", src.path, err)
	}
	return nil
}

// goEnv is the environment of the Go agent's build: wasip1/wasm, and the
// embedded SDK served by a file proxy in front of the user's GOPROXY (the
// module is not published, and not in the checksum database).
func goEnv(ctx context.Context, gobin, root string) ([]string, error) {
	proxy := goProxyDir(root)
	if err := writeGoProxy(proxy); err != nil {
		return nil, fmt.Errorf("the go sdk's module proxy: %w", err)
	}
	out, err := exec.CommandContext(ctx, gobin, "env", "GOPROXY", "GONOSUMDB", "GOFLAGS").Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	vals := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	for len(vals) < 3 {
		vals = append(vals, "")
	}
	goproxy, nosumdb, goflags := vals[0], vals[1], vals[2]
	if goproxy == "" {
		goproxy = "https://proxy.golang.org,direct"
	}
	// -mod=mod: a go.sum without the SDK's lines (a go.mod written by
	// hand) is completed instead of refused.
	if !strings.Contains(goflags, "-mod=") {
		goflags = strings.TrimSpace(goflags + " -mod=mod")
	}
	return []string{
		"GOOS=wasip1", "GOARCH=wasm",
		"GOPROXY=" + fileURL(proxy) + "," + goproxy,
		"GONOSUMDB=" + goListValue(nosumdb, SDKModule),
		"GOFLAGS=" + goflags,
	}, nil
}

// goProxyDir is the module proxy directory under the cache root.
func goProxyDir(root string) string { return filepath.Join(root, "goproxy") }

func fileURL(dir string) string {
	p := filepath.ToSlash(dir)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive path
	}
	return "file://" + p
}

// run runs a build step; its output is kept for the error only.
func run(ctx context.Context, dir string, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if s := strings.TrimSpace(out.String()); s != "" {
			return fmt.Errorf("%v:\n%s", err, tail(s, 60))
		}
		return err
	}
	return nil
}

// moveFile renames src to dst, or copies it next to dst and renames the
// copy when they are on different file systems.
func moveFile(src, dst string) error {
	if os.Rename(src, dst) == nil {
		return nil
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return writeFileIfChanged(dst, data)
}
