package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
)

// cgoPackage is the one package allowed cgo files.
const cgoPackage = "internal/wasmtime"

// minNames is how many functions each path must name at least.
const minNames = 4

// wantPaths are the subsections `## Paths` must have.
var wantPaths = []string{"A tool call", "A message", "A message forwarded across hosts", "A key-value write"}

// pkgInfo is what the checker needs of one package, as `go list` gives it,
// with paths inside the module (internal/config, not the import path).
type pkgInfo struct {
	Dir      string
	GoFiles  []string // non-test files, cgo ones included
	CgoFiles []string
	Imports  []string // the module's packages only, non-test imports
}

// module is every package of the module by its path inside it.
type module map[string]*pkgInfo

// check returns every way the doc disagrees with the module, each a
// sentence naming what to change.
func check(d *archDoc, mod module) []string {
	var errs []string
	floors := map[string]int{}
	for _, r := range d.rows {
		if _, dup := floors[r.pkg]; dup {
			errs = append(errs, fmt.Sprintf("line %d: package %s is in the table twice", r.line, r.pkg))
		}
		floors[r.pkg] = r.floor
		if mod[r.pkg] == nil {
			errs = append(errs, fmt.Sprintf("line %d: the table lists %s, which is not a package of the module; remove its row", r.line, r.pkg))
		}
	}
	for _, p := range sortedKeys(mod) {
		if _, ok := floors[p]; !ok {
			errs = append(errs, missingRow(p, mod[p], floors))
		}
	}
	for _, p := range sortedKeys(mod) {
		fp, ok := floors[p]
		if !ok {
			continue
		}
		for _, q := range mod[p].Imports {
			if fq, ok := floors[q]; ok && fq >= fp {
				errs = append(errs, fmt.Sprintf("import back up: %s (floor %d) imports %s (floor %d); an import must go to a lower floor", p, fp, q, fq))
			}
		}
		if len(mod[p].CgoFiles) > 0 && p != cgoPackage {
			errs = append(errs, fmt.Sprintf("%s has cgo files (%s); only %s may import \"C\"", p, strings.Join(mod[p].CgoFiles, ", "), cgoPackage))
		}
	}
	errs = append(errs, cycles(mod)...)
	if got, want := d.lines[d.floorsFrom:d.floorsTo], floorsBlock(d.rows); !slices.Equal(got, want) {
		errs = append(errs, fmt.Sprintf("line %d: the ## Floors diagram does not agree with the table; run `go test ./internal/archtest -update` to rewrite it, it should read:\n%s", d.floorsFrom, strings.Join(want, "\n")))
	}
	errs = append(errs, checkPaths(d, mod)...)
	return errs
}

// missingRow says which row to add for a package the table lacks: its floor
// is one above its highest import the table has.
func missingRow(p string, info *pkgInfo, floors map[string]int) string {
	floor, because := 0, ""
	for _, q := range info.Imports {
		if f, ok := floors[q]; ok && f+1 > floor {
			floor, because = f+1, fmt.Sprintf(" (one above %s, floor %d, the highest it imports)", q, f)
		}
	}
	return fmt.Sprintf("package %s is not in the table of docs/architecture.md; add the row\n| `%s` | %d | what it owns |\nat floor %d or above%s, and run `go test ./internal/archtest -update` to redraw ## Floors", p, p, floor, floor, because)
}

// cycles reports each import cycle once, as a -> b -> a.
func cycles(mod module) []string {
	const (
		unseen = iota
		onStack
		done
	)
	state := map[string]int{}
	var stack []string
	var errs []string
	var visit func(p string)
	visit = func(p string) {
		state[p] = onStack
		stack = append(stack, p)
		for _, q := range mod[p].Imports {
			if mod[q] == nil {
				continue
			}
			switch state[q] {
			case unseen:
				visit(q)
			case onStack:
				i := slices.Index(stack, q)
				cyc := append(append([]string{}, stack[i:]...), q)
				errs = append(errs, "import cycle: "+strings.Join(cyc, " -> "))
			}
		}
		stack = stack[:len(stack)-1]
		state[p] = done
	}
	for _, p := range sortedKeys(mod) {
		if state[p] == unseen {
			visit(p)
		}
	}
	return errs
}

// checkPaths checks the four paths are there, each naming at least minNames
// functions, and that every name resolves.
func checkPaths(d *archDoc, mod module) []string {
	var errs []string
	for _, w := range wantPaths {
		if !slices.ContainsFunc(d.paths, func(p docPath) bool { return p.title == w }) {
			errs = append(errs, fmt.Sprintf("## Paths has no subsection %q", "### "+w))
		}
	}
	decls := map[string]map[string]bool{}
	for _, p := range d.paths {
		if len(p.names) < minNames {
			errs = append(errs, fmt.Sprintf("line %d: path %q names %d functions; want at least %d, in backticks as `pkg.Func` or `pkg.Type.Method`", p.line, p.title, len(p.names), minNames))
		}
		for _, n := range p.names {
			if err := resolve(n, mod, decls); err != nil {
				errs = append(errs, fmt.Sprintf("line %d: path %q: %v", p.line, p.title, err))
			}
		}
	}
	return errs
}

// resolve finds name (pkg.Func or pkg.Type.Method) in the non-test files of
// the package; decls caches each package's declarations.
func resolve(name string, mod module, decls map[string]map[string]bool) error {
	m := funcName.FindStringSubmatch(name)
	qual, sym := m[1], m[2]
	var found []string
	for _, p := range sortedKeys(mod) {
		if (p == qual || strings.HasSuffix(p, "/"+qual)) && len(mod[p].GoFiles) > 0 {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 0:
		return fmt.Errorf("`%s`: no package of the module is %s", name, qual)
	case 1:
	default:
		return fmt.Errorf("`%s`: %s is ambiguous (%s); write more of its path", name, qual, strings.Join(found, ", "))
	}
	p := found[0]
	if decls[p] == nil {
		ds, err := declarations(mod[p])
		if err != nil {
			return fmt.Errorf("`%s`: %w", name, err)
		}
		decls[p] = ds
	}
	if !decls[p][sym] {
		return fmt.Errorf("`%s`: %s has no function or method %s in its non-test files", name, p, sym)
	}
	return nil
}

// declarations lists a package's functions (F), methods (T.M) and interface
// methods (T.M) from its non-test files.
func declarations(info *pkgInfo) (map[string]bool, error) {
	ds := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range info.GoFiles {
		file, err := parser.ParseFile(fset, filepath.Join(info.Dir, f), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parse: %w", err)
		}
		for _, decl := range file.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if decl.Recv == nil {
					ds[decl.Name.Name] = true
				} else if t := receiverType(decl.Recv.List[0].Type); t != "" {
					ds[t+"."+decl.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok {
						continue
					}
					if it, ok := ts.Type.(*ast.InterfaceType); ok {
						for _, m := range it.Methods.List {
							for _, n := range m.Names {
								ds[ts.Name.Name+"."+n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	return ds, nil
}

// receiverType is T of a receiver T, *T, T[K] or *T[K].
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

func sortedKeys(mod module) []string {
	keys := make([]string, 0, len(mod))
	for k := range mod {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
