package host

import (
	"fmt"
	"strings"

	wt "github.com/toolhostd/toolhostd/internal/host/wasmtime"
)

// The host's side of toolhost:agent@0.1.0 as function types, to check a
// component's imports against when it is loaded. The host functions of
// imports.go are defined untyped (wasmtime takes the types from the
// component), so without this check a guest built against another version
// of the world would link and fail at instantiation with a bare "type
// mismatch" that names no function.
//
// Signatures are rendered by signature below: parameter types only (names
// are not part of a function's type), records, variants and enums
// structurally, a resource as own or borrow.
const (
	witErrorCode   = "enum{not-found, denied, invalid-argument, unsupported, unavailable, busy, timeout, cancelled, protocol, internal}"
	witHostError   = "record{code: " + witErrorCode + ", message: string}"
	witTool        = "record{name: string, description: option<string>, input-schema: string}"
	witToolResult  = "record{name: string, arguments: string, value: string}"
	witResInfo     = "record{uri: string, name: string, description: option<string>, mime-type: option<string>}"
	witResContent  = "record{uri: string, mime-type: option<string>, content: string}"
	witEvent       = "variant{tool-result(" + witToolResult + "), error(" + witHostError + "), resource-list-updated(list<" + witResInfo + ">), resource-updated(" + witResContent + "), shutdown}"
	witOptEnvelope = "option<record{id: string, event: " + witEvent + "}>"
)

func witResult(ok string) string { return "result<" + ok + ", " + witHostError + ">" }

// contractFuncs are the function types of the world's imports, by
// interface and function name.
var contractFuncs = map[string]map[string]string{
	ifaceTooling: {
		"get":                                       "func(string) -> " + witResult("own"),
		"[method]tooling.kind":                      "func(borrow) -> string",
		"[method]tooling.name":                      "func(borrow) -> string",
		"[method]tooling.list-tools":                "func(borrow) -> " + witResult("list<"+witTool+">"),
		"[method]tooling.call-tool":                 "func(borrow, string, string) -> " + witResult("string"),
		"[method]tooling.is-open":                   "func(borrow, string) -> bool",
		"[method]tooling.cancel":                    "func(borrow, string) -> bool",
		"[method]tooling.call-tool-blocking":        "func(borrow, string, string) -> " + witResult(witToolResult),
		"[method]tooling.list-resources":            "func(borrow) -> " + witResult("list<"+witResInfo+">"),
		"[method]tooling.read-resource":             "func(borrow, string) -> " + witResult(witResContent),
		"[method]tooling.subscribe-resource-list":   "func(borrow) -> " + witResult("string"),
		"[method]tooling.unsubscribe-resource-list": "func(borrow, string) -> bool",
		"[method]tooling.subscribe-resource":        "func(borrow, string) -> " + witResult("string"),
		"[method]tooling.unsubscribe-resource":      "func(borrow, string) -> bool",
	},
	ifaceInbox: {
		"recv":     "func(option<u32>) -> " + witOptEnvelope,
		"try-recv": "func() -> " + witOptEnvelope,
		"pending":  "func() -> u32",
	},
	ifaceLog: {
		"write": "func(enum{debug, info, warn, error}, string)",
	},
}

// signature renders f's type without parameter names.
func signature(f *wt.FuncType) string {
	parts := make([]string, len(f.Params))
	for i, p := range f.Params {
		parts[i] = p.Type.String()
	}
	s := "func(" + strings.Join(parts, ", ") + ")"
	if f.Result != nil {
		s += " -> " + f.Result.String()
	}
	return s
}

// checkImports refuses a component whose imports of the world's
// interfaces do not match the host's: a function the host lacks, or one
// of another type, named with both types.
func checkImports(c *wt.Component) error {
	imports, err := c.Imports()
	if err != nil {
		return err
	}
	for _, it := range imports {
		want, ok := contractFuncs[it.Name]
		if !ok || it.Kind != wt.ItemInstance {
			continue
		}
		for _, f := range it.Exports {
			if f.Kind != wt.ItemFunc || f.Func == nil {
				continue
			}
			w, ok := want[f.Name]
			if !ok {
				return fmt.Errorf("%w: it imports %s#%s, which toolhostd does not provide (toolhost:agent@0.1.0)", ErrBadComponent, it.Name, f.Name)
			}
			if got := signature(f.Func); got != w {
				return fmt.Errorf("%w: it imports %s#%s as %s, toolhostd provides %s (toolhost:agent@0.1.0)", ErrBadComponent, it.Name, f.Name, got, w)
			}
		}
	}
	return nil
}
