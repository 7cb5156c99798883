package host

import (
	"fmt"
	"strings"

	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// The host's side of toolhost:agent (0.1.0, 0.2.0 and 0.3.0, with the
// wasi:keyvalue interfaces 0.3.0 imports) as function types,
// to check a component's imports against when it is loaded. The host
// functions of imports.go are defined untyped (wasmtime takes the types
// from the component), so without this check a guest built against another
// version of the world would link and fail at instantiation with a bare
// "type mismatch" that names no function.
//
// Signatures are rendered by signature below: parameter types only (names
// are not part of a function's type), records, variants and enums
// structurally, a resource as own or borrow.
const (
	witErrorCode  = "enum{not-found, denied, invalid-argument, unsupported, unavailable, busy, timeout, cancelled, protocol, internal}"
	witHostError  = "record{code: " + witErrorCode + ", message: string}"
	witTool       = "record{name: string, description: option<string>, input-schema: string}"
	witToolResult = "record{name: string, arguments: string, value: string}"
	witResInfo    = "record{uri: string, name: string, description: option<string>, mime-type: option<string>}"
	witResContent = "record{uri: string, mime-type: option<string>, content: string}"
	witEvent010   = "variant{tool-result(" + witToolResult + "), error(" + witHostError + "), resource-list-updated(list<" + witResInfo + ">), resource-updated(" + witResContent + "), shutdown}"

	// 0.2.0
	witToolCall     = "record{id: string, name: string, arguments: string}"
	witMessage      = "record{role: enum{system, user, assistant, tool}, content: string, tool-calls: list<" + witToolCall + ">, tool-call-id: option<string>}"
	witToolChoice   = "variant{auto, none, required, named(string)}"
	witChatRequest  = "record{model: option<string>, messages: list<" + witMessage + ">, tools: list<" + witTool + ">, tool-choice: option<" + witToolChoice + ">, max-tokens: option<u32>, temperature: option<f32>, stop: list<string>}"
	witChatResponse = "record{message: " + witMessage + ", finish-reason: enum{stop, length, tool-calls, content-filter, other}, usage: record{input-tokens: u32, output-tokens: u32}, model: string}"
	witEvent020     = "variant{tool-result(" + witToolResult + "), error(" + witHostError + "), resource-list-updated(list<" + witResInfo + ">), resource-updated(" + witResContent + "), shutdown, chat-delta(string), chat-done(" + witChatResponse + ")}"

	// 0.3.0
	witAgentMessage = "record{sender: string, session: option<string>, content: string}"
	witEvent030     = "variant{tool-result(" + witToolResult + "), error(" + witHostError + "), resource-list-updated(list<" + witResInfo + ">), resource-updated(" + witResContent + "), shutdown, chat-delta(string), chat-done(" + witChatResponse + "), message(" + witAgentMessage + "), reply-delta(string), reply(string)}"
)

// wasi:keyvalue@0.2.0-draft2 (keyvalue.go).
const (
	witKVError    = "variant{no-such-store, access-denied, other(string)}"
	witKVBytes    = "option<list<u8>>"
	witKVCASError = "variant{store-error(" + witKVError + "), cas-failed(own)}"
)

func witKVResult(ok string) string { return "result<" + ok + ", " + witKVError + ">" }

// kvFuncs are the function types of the store's three interfaces.
var kvFuncs = map[string]map[string]string{
	kvStore: {
		"open":                     "func(string) -> " + witKVResult("own"),
		"[method]bucket.get":       "func(borrow, string) -> " + witKVResult(witKVBytes),
		"[method]bucket.set":       "func(borrow, string, list<u8>) -> " + witKVResult("_"),
		"[method]bucket.delete":    "func(borrow, string) -> " + witKVResult("_"),
		"[method]bucket.exists":    "func(borrow, string) -> " + witKVResult("bool"),
		"[method]bucket.list-keys": "func(borrow, option<string>) -> " + witKVResult("record{keys: list<string>, cursor: option<string>}"),
	},
	kvAtomics: {
		"[static]cas.new":     "func(borrow, string) -> " + witKVResult("own"),
		"[method]cas.current": "func(borrow) -> " + witKVResult(witKVBytes),
		"increment":           "func(borrow, string, s64) -> " + witKVResult("s64"),
		"swap":                "func(own, list<u8>) -> result<_, " + witKVCASError + ">",
	},
	kvBatch: {
		"get-many":    "func(borrow, list<string>) -> " + witKVResult("list<option<tuple<string, list<u8>>>>"),
		"set-many":    "func(borrow, list<tuple<string, list<u8>>>) -> " + witKVResult("_"),
		"delete-many": "func(borrow, list<string>) -> " + witKVResult("_"),
	},
}

func witResult(ok string) string { return "result<" + ok + ", " + witHostError + ">" }

func witOptEnvelope(event string) string {
	return "option<record{id: string, event: " + event + "}>"
}

// toolingFuncs are the tooling interface's function types, the same in
// both versions.
var toolingFuncs = map[string]string{
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
}

// providerFuncs are the provider interface's function types (0.2.0 on).
var providerFuncs = map[string]string{
	"get":                          "func(string) -> " + witResult("own"),
	"[method]provider.kind":        "func(borrow) -> string",
	"[method]provider.name":        "func(borrow) -> string",
	"[method]provider.chat":        "func(borrow, " + witChatRequest + ") -> " + witResult(witChatResponse),
	"[method]provider.chat-stream": "func(borrow, " + witChatRequest + ") -> " + witResult("string"),
	"[method]provider.is-open":     "func(borrow, string) -> bool",
	"[method]provider.cancel":      "func(borrow, string) -> bool",
}

func inboxFuncs(event string) map[string]string {
	return map[string]string{
		"recv":     "func(option<u32>) -> " + witOptEnvelope(event),
		"try-recv": "func() -> " + witOptEnvelope(event),
		"pending":  "func() -> u32",
	}
}

var logFuncs = map[string]string{"write": "func(enum{debug, info, warn, error}, string)"}

// contractFuncs are the function types of the imports of every version of
// the world, by interface (its versioned name) and function name.
var contractFuncs = map[string]map[string]string{
	v010.tooling:  toolingFuncs,
	v010.inbox:    inboxFuncs(witEvent010),
	v010.log:      logFuncs,
	v020.tooling:  toolingFuncs,
	v020.provider: providerFuncs,
	v020.inbox:    inboxFuncs(witEvent020),
	v020.log:      logFuncs,
	v030.tooling:  toolingFuncs,
	v030.provider: providerFuncs,
	v030.messages: {
		"reply-delta": "func(string, string) -> " + witResult("_"),
		"reply":       "func(string, string) -> " + witResult("_"),
		"reply-error": "func(string, string) -> " + witResult("_"),
		"send":        "func(string, string, option<string>) -> " + witResult("string"),
		"is-open":     "func(string) -> bool",
		"cancel":      "func(string) -> bool",
	},
	v030.inbox: inboxFuncs(witEvent030),
	v030.log:   logFuncs,
	kvStore:    kvFuncs[kvStore],
	kvAtomics:  kvFuncs[kvAtomics],
	kvBatch:    kvFuncs[kvBatch],
}

// receivesMessages reports whether a component can be given messages: it
// imports the inbox of toolhost:agent@0.3.0 or later, whose events carry
// them.
func receivesMessages(c *wt.Component) (bool, error) {
	imports, err := c.Imports()
	if err != nil {
		return false, err
	}
	for _, it := range imports {
		if it.Name == v030.inbox {
			return true, nil
		}
	}
	return false, nil
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

// versionOf is the world version of one of its interface names ("" for
// another name).
func versionOf(iface string) string {
	for _, w := range worlds {
		switch iface {
		case w.types, w.tooling, w.inbox, w.log:
			return w.version
		case w.provider, w.messages:
			if iface != "" {
				return w.version
			}
		}
	}
	return ""
}

// checkImports refuses a component whose imports of the world's
// interfaces do not match the host's: a function the host lacks, or one
// of another type, named with both types; or that imports interfaces of
// two versions of the world (a 0.1.0 inbox cannot carry 0.2.0's events).
func checkImports(c *wt.Component) error {
	imports, err := c.Imports()
	if err != nil {
		return err
	}
	first := ""
	for _, it := range imports {
		if v := versionOf(it.Name); v != "" {
			if first == "" {
				first = it.Name
			} else if fv := versionOf(first); fv != v {
				return fmt.Errorf("%w: it imports both %s and %s: interfaces of toolhost:agent@%s and @%s cannot be mixed", ErrBadComponent, first, it.Name, fv, v)
			}
		}
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
				return fmt.Errorf("%w: it imports %s#%s, which toolhostd does not provide", ErrBadComponent, it.Name, f.Name)
			}
			if got := signature(f.Func); got != w {
				return fmt.Errorf("%w: it imports %s#%s as %s, toolhostd provides %s", ErrBadComponent, it.Name, f.Name, got, w)
			}
		}
	}
	return nil
}
