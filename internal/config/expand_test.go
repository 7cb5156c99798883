package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "token")
	if err := os.WriteFile(secretFile, []byte("file-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	crlf := filepath.Join(dir, "crlf")
	if err := os.WriteFile(crlf, []byte("two\nlines\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TH_TOKEN", "env-secret")
	t.Setenv("TH_EMPTY", "")
	os.Unsetenv("TH_UNSET")

	for _, tc := range []struct {
		name, in, want string
		is             error // nil: success
		msg            string
	}{
		{"plain", "no references", "no references", nil, ""},
		{"env", "Bearer ${env:TH_TOKEN}", "Bearer env-secret", nil, ""},
		{"env twice", "${env:TH_TOKEN}:${env:TH_TOKEN}", "env-secret:env-secret", nil, ""},
		{"env empty", "x${env:TH_EMPTY}y", "xy", nil, ""},
		{"file", "${file:" + secretFile + "}", "file-secret", nil, ""},
		{"file keeps inner newlines", "${file:" + crlf + "}", "two\nlines", nil, ""},
		{"escape", "$${env:TH_TOKEN}", "${env:TH_TOKEN}", nil, ""},
		{"escape then ref", "$${x}${env:TH_TOKEN}", "${x}env-secret", nil, ""},
		{"lone dollars", "cost $5 $$ $", "cost $5 $$ $", nil, ""},
		{"unset", "Bearer ${env:TH_UNSET}", "", ErrUnsetVariable, "${env:TH_UNSET}: environment variable is not set"},
		{"missing file", "${file:" + dir + "/nope}", "", os.ErrNotExist, "no such file"},
		{"unterminated", "sk-live ${env:TH_TOKEN", "", ErrBadReference, "unterminated"},
		{"no scheme", "${TH_TOKEN}", "", ErrBadReference, "without a scheme"},
		{"unknown scheme", "${vault:x}", "", ErrBadReference, "unknown reference scheme"},
		{"bad env name", "${env:1X}", "", ErrBadReference, "invalid variable name"},
		{"empty env name", "${env:}", "", ErrBadReference, "invalid variable name"},
		{"relative file", "${file:token}", "", ErrBadReference, "must be absolute"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Expand(tc.in)
			if tc.is == nil && tc.msg == "" {
				if err != nil || got != tc.want {
					t.Errorf("Expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Expand(%q) = %q, want an error", tc.in, got)
			}
			if tc.is != nil && tc.is != os.ErrNotExist && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not contain %q", err, tc.msg)
			}
			if got != "" {
				t.Errorf("value %q returned with the error", got)
			}
		})
	}
}

// TestSecretsNeverInErrors: no error from Expand, Tooling.Expanded,
// Agent.ExpandedEnv or Parse quotes a secret value or the literal text around
// a reference.
func TestSecretsNeverInErrors(t *testing.T) {
	const secret = "sk-live-0123456789"
	t.Setenv("TH_SECRET", secret)
	os.Unsetenv("TH_UNSET")
	secretFile := filepath.Join(t.TempDir(), "s")
	if err := os.WriteFile(secretFile, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	inputs := []string{
		secret + " ${env:TH_UNSET}",
		"${env:TH_SECRET} ${env:TH_UNSET}",
		"${file:" + secretFile + "}${env:TH_UNSET}",
		secret + "${env:TH_SECRET",
		secret + "${vault:" + secret + "}",
		secret + "${" + secret + "}",
		"${env:" + secret + "!}",
		"${file:" + secretFile + "}${file:/nonexistent/x}",
	}
	for _, in := range inputs {
		_, err := Expand(in)
		if err == nil {
			t.Errorf("Expand(%q) succeeded", in)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("Expand error leaks the secret: %v", err)
		}
	}

	tl := &Tooling{
		Name:            "t",
		ToolingEndpoint: ToolingEndpoint{URL: "https://h/${env:TH_SECRET}", Headers: map[string]string{"Authorization": "Bearer ${env:TH_SECRET}"}},
		ToolingProcess:  ToolingProcess{Args: []string{"${env:TH_SECRET}", "${env:TH_UNSET}"}},
	}
	if _, err := tl.Expanded(); err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "args[1]") || !strings.Contains(err.Error(), "TH_UNSET") {
		t.Errorf("Tooling.Expanded error = %v", err)
	}
	tl.Args = nil
	tl.Env = map[string]string{"A": "${env:TH_SECRET}", "B": secret + "${env:TH_UNSET}"}
	if _, err := tl.Expanded(); err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "env.B") {
		t.Errorf("Tooling.Expanded error = %v", err)
	}
	a := &Agent{Name: "a", Env: map[string]string{"K": secret + "${env:TH_UNSET}"}}
	if _, err := a.ExpandedEnv(); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("Agent.ExpandedEnv error = %v", err)
	}

	doc := "version = 1\n[tooling.t]\nurl = \"https://h/mcp\"\nheaders = { Authorization = \"Bearer " + secret + "${env:X\" }\n" +
		"[agent.a]\ncomponent = \"a.wasm\"\nenv = { K = \"" + secret + "${vault:y}\" }\n"
	_, err := Parse("s.toml", []byte(doc))
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("Parse error = %v", err)
	}
}

func TestExpanded(t *testing.T) {
	t.Setenv("TH_TOKEN", "tok")
	t.Setenv("TH_HOST", "example.com")
	tl := &Tooling{
		Name:            "r",
		ToolingProcess:  ToolingProcess{Command: "/opt/${env:TH_TOKEN}/bin", Args: []string{"--token", "${env:TH_TOKEN}", "$${literal}"}, Env: map[string]string{"T": "${env:TH_TOKEN}"}},
		ToolingEndpoint: ToolingEndpoint{URL: "https://${env:TH_HOST}/mcp", Headers: map[string]string{"Authorization": "Bearer ${env:TH_TOKEN}"}},
	}
	x, err := tl.Expanded()
	if err != nil {
		t.Fatal(err)
	}
	if x.Command != "/opt/tok/bin" || x.URL != "https://example.com/mcp" || x.Args[1] != "tok" || x.Args[2] != "${literal}" || x.Env["T"] != "tok" || x.Headers["Authorization"] != "Bearer tok" {
		t.Errorf("Expanded = %+v", x)
	}
	if tl.Args[1] != "${env:TH_TOKEN}" || tl.Env["T"] != "${env:TH_TOKEN}" || tl.URL != "https://${env:TH_HOST}/mcp" {
		t.Errorf("Expanded changed the original: %+v", tl)
	}
	a := &Agent{Name: "a", Env: map[string]string{"MODE": "${env:TH_TOKEN}"}}
	if env, err := a.ExpandedEnv(); err != nil || env["MODE"] != "tok" {
		t.Errorf("ExpandedEnv = %v, %v", env, err)
	}
}

// TestParseDoesNotResolve: a reference to an unset variable loads fine (it
// is resolved at use, not at load), and HasRefs sees it.
func TestParseDoesNotResolve(t *testing.T) {
	os.Unsetenv("TH_UNSET")
	c, err := Parse("", []byte("version = 1\n[tooling.r]\nurl = \"${env:TH_UNSET}\"\nheaders = { A = \"${file:/nonexistent}\" }\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Tooling["r"]
	if r.URL != "${env:TH_UNSET}" || !HasRefs(r.URL) || HasRefs("$${env:X}") || HasRefs("plain") {
		t.Errorf("tooling = %+v", r)
	}
	if _, err := r.Expanded(); !errors.Is(err, ErrUnsetVariable) {
		t.Errorf("Expanded error = %v, want ErrUnsetVariable", err)
	}
}
