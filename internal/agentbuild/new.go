package agentbuild

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/mod/modfile"

	sdkjs "github.com/toolhostd/toolhostd/sdk/js"
)

//go:embed templates
var templates embed.FS

// Langs are the languages New writes a project in.
var Langs = []string{"js", "go"}

// agentName is a config agent name (1 to 64 letters, digits, '-' and
// '_'), not starting as a flag would.
var agentName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// A Project is what New wrote.
type Project struct {
	Dir   string   // the project directory
	Name  string   // the agent's name: the directory's base name
	Lang  string   // "js" or "go"
	Files []string // the files written, relative to Dir
}

// New writes a project for the agent named after dir's base name into dir,
// which must not exist or be empty: the agent (the hello shape: list the
// tools of a tooling, call one), its build setup (for Go a go.mod and
// go.sum requiring SDKModule@SDKVersion), a config granting it a tooling,
// a README and a .gitignore; for JS also sdk/js (toolhost.js, which the
// agent imports, and the TypeScript declarations editors complete from).
func New(dir, lang string) (*Project, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(abs) // new . names the agent after the directory
	if !agentName.MatchString(name) {
		return nil, fmt.Errorf("invalid agent name %q: use 1 to 64 letters, digits, '-' and '_', starting with a letter or digit", name)
	}
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s exists and is not a directory", dir)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		if len(entries) > 0 {
			return nil, fmt.Errorf("%s exists and is not empty: new writes a project into a new or empty directory", dir)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	vars := map[string]string{"__NAME__": name}
	files := map[string]string{ // project file -> template
		"toolhostd.toml": "toolhostd.toml.tmpl",
		"README.md":      "README.md.tmpl",
		".gitignore":     "gitignore.tmpl",
	}
	var order []string
	contents := map[string][]byte{}
	switch lang {
	case "js":
		files["agent.js"] = "js/agent.js.tmpl"
		order = []string{"agent.js"}
		// The helper module the agent imports, as this toolhostd has it.
		err := fs.WalkDir(sdkjs.Files, ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := sdkjs.Files.ReadFile(path)
			contents[path] = b
			order = append(order, path)
			return err
		})
		if err != nil {
			return nil, err
		}
		vars["__LANGNAME__"] = "JavaScript"
		vars["__SOURCE__"] = "agent.js"
		vars["__BUILDNOTE__"] = "`toolhostd build` uses componentize-qjs (QuickJS, about 1.7 MB);\n" +
			"`--toolchain spidermonkey` uses componentize-js (SpiderMonkey, about 12 MB).\n" +
			"Both are npm packages it installs into its cache on first use: Node.js and\n" +
			"npm must be on PATH."
	case "go":
		mod, err := sdkGoMod()
		if err != nil {
			return nil, err
		}
		f, err := modfile.ParseLax("go.mod", mod, nil)
		if err != nil || f.Go == nil {
			return nil, fmt.Errorf("the embedded go sdk's go.mod has no go line (%v)", err)
		}
		sums, err := SDKSums()
		if err != nil {
			return nil, err
		}
		contents["go.sum"] = []byte(sums)
		// Where toolhostd build serves the SDK from, for the README's
		// GOPROXY line (as build's goEnv puts it).
		proxy := "file://$HOME/.cache/toolhostd/goproxy"
		if root, err := CacheRoot(); err == nil {
			proxy = fileURL(goProxyDir(root))
		}
		files["main.go"] = "go/main.go.tmpl"
		files["go.mod"] = "go/go.mod.tmpl"
		order = []string{"main.go", "go.mod", "go.sum"}
		vars["__GO__"] = f.Go.Version
		vars["__SDK__"] = SDKModule
		vars["__SDKVERSION__"] = SDKVersion
		vars["__LANGNAME__"] = "Go"
		vars["__SOURCE__"] = "main.go"
		vars["__BUILDNOTE__"] = "It uses the SDK " + SDKModule + " " + SDKVersion + ".\n" +
			"`toolhostd build` runs `go build` for GOOS=wasip1 GOARCH=wasm\n" +
			"(-buildmode=c-shared) and componentizes the module with jco and the WASI\n" +
			"preview1 reactor adapter (npm packages it installs into its cache on first\n" +
			"use: Node.js, npm and Go must be on PATH). The SDK is not published:\n" +
			"toolhostd build serves the copy it embeds from a module proxy in its cache.\n" +
			"For go vet, gopls or go test here, after a first build:\n\n" +
			"```sh\n" +
			"export GOPROXY=" + proxy + ",https://proxy.golang.org,direct\n" +
			"export GONOSUMDB=" + SDKModule + "\n" +
			"```"
	default:
		return nil, fmt.Errorf("language %q: want %s", lang, strings.Join(Langs, " or "))
	}
	order = append(order, "toolhostd.toml", "README.md", ".gitignore")
	for _, f := range order {
		if contents[f] != nil {
			continue // sdk/js, go.sum
		}
		t, err := templates.ReadFile("templates/" + files[f])
		if err != nil {
			return nil, err
		}
		s := string(t)
		for k, v := range vars {
			s = strings.ReplaceAll(s, k, v)
		}
		contents[f] = []byte(s)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, f := range order {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			return nil, err
		}
		if err := writeNew(filepath.Join(dir, f), contents[f]); err != nil {
			return nil, err
		}
	}
	return &Project{Dir: dir, Name: name, Lang: lang, Files: order}, nil
}

// writeNew creates path with data; it never replaces a file.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
