package wasmtime

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// wasmtimeInclude finds the real headers shipped with wasmtime-go.
func wasmtimeInclude(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/bytecodealliance/wasmtime-go/v39").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "build", "include")
	if _, err := os.Stat(filepath.Join(dir, "wasmtime.h")); err != nil {
		t.Fatalf("wasmtime headers: %v", err)
	}
	return dir
}

func compileC(t *testing.T, include, src string, run bool) []byte {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatalf("no C compiler: %v", err)
	}
	dir := t.TempDir()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cfile, bin := filepath.Join(dir, "check.c"), filepath.Join(dir, "check")
	if err := os.WriteFile(cfile, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"-std=c11", "-Wall", "-Werror", "-I", include, "-I", wd, cfile, "-o", bin}
	if !run {
		args = append(args[:len(args)-2], "-c", "-o", bin+".o")
	}
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	if !run {
		return nil
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("run check program: %v", err)
	}
	return out
}

// TestHeaderLayout compiles a C program against wasmtime's real headers and
// compares every size, alignment, offset and constant in declaredLayout, and
// Version against WASMTIME_VERSION.
func TestHeaderLayout(t *testing.T) {
	include := wasmtimeInclude(t)
	table := declaredLayout()
	var src strings.Builder
	src.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include <wasmtime.h>\n#include <wasi.h>\n\nint main(void) {\n")
	src.WriteString("  printf(\"version %s\\n\", WASMTIME_VERSION);\n")
	for i, e := range table {
		fmt.Fprintf(&src, "  printf(\"%d %%lld\\n\", (long long)(%s));\n", i, e.Expr)
	}
	src.WriteString("  return 0;\n}\n")
	out := compileC(t, include, src.String(), true)

	sc := bufio.NewScanner(bytes.NewReader(out))
	seen := 0
	for sc.Scan() {
		key, val, _ := strings.Cut(sc.Text(), " ")
		if key == "version" {
			if val != Version {
				t.Errorf("Version = %q, headers say %q", Version, val)
			}
			continue
		}
		i, err := strconv.Atoi(key)
		if err != nil {
			t.Fatalf("bad line %q", sc.Text())
		}
		real, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			t.Fatalf("bad line %q", sc.Text())
		}
		if table[i].Value != real {
			t.Errorf("%s: declared %d, real headers %d", table[i].Expr, table[i].Value, real)
		}
		seen++
	}
	if seen != len(table) {
		t.Fatalf("checked %d of %d entries", seen, len(table))
	}
	for _, want := range []string{"sizeof(wasmtime_component_val_t)", "offsetof(wasmtime_component_val_t, of)"} {
		found := false
		for _, e := range table {
			found = found || e.Expr == want
		}
		if !found {
			t.Errorf("table lacks %s", want)
		}
	}
}

// TestHeaderPrototypes includes capi.h after the real headers (its type
// definitions switched off by TH_REAL_HEADERS): the C compiler rejects any
// prototype that does not match wasmtime's.
func TestHeaderPrototypes(t *testing.T) {
	include := wasmtimeInclude(t)
	compileC(t, include, "#include <wasmtime.h>\n#include <wasi.h>\n#define TH_REAL_HEADERS 1\n#include \"capi.h\"\n", false)
}
