package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/engine/prefault"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/kv"
	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// world is one version of toolhost:agent: the names of its interfaces.
type world struct {
	version                              string
	types, tooling, provider, inbox, log string // provider: "" before 0.2.0
	messages                             string // "" before 0.3.0
}

func newWorld(version string, withProvider, withMessages bool) world {
	name := func(iface string) string { return "toolhost:agent/" + iface + "@" + version }
	w := world{version: version, types: name("types"), tooling: name("tooling"), inbox: name("inbox"), log: name("log")}
	if withProvider {
		w.provider = name("provider")
	}
	if withMessages {
		w.messages = name("messages")
	}
	return w
}

// The versions of the world the host serves, all at once: a component
// built against 0.1.0 links to the same functions as one of 0.2.0, less
// the provider interface (so its inbox never carries a chat event), and one
// of 0.2.0 to those of 0.3.0 less the messages interface (its inbox never
// carries a message or a reply: the daemon refuses a message to it).
var (
	v010   = newWorld("0.1.0", false, false)
	v020   = newWorld("0.2.0", true, false)
	v030   = newWorld("0.3.0", true, true)
	worlds = []world{v010, v020, v030}
)

// The host resource types of the handles.
const (
	toolingType  uint32 = 1
	providerType uint32 = 2
)

// agentState is a store's data: what the host functions of one agent need.
// It is used only on the agent's goroutine, like the store.
type agentState struct {
	name string
	pa   *contract.Agent
	in   *inbox.Inbox
	log  *zap.Logger
	logs *logLimiter // guest log lines
	// stopping ends when the host asks the agent to stop: blocking tooling
	// operations then fail with cancelled.
	stopping context.Context
	// killed ends at the hard stop: a waiting recv returns none.
	killed context.Context

	// handles are the guest's tooling and provider handles.
	handles handleTable
	// kv is the agent's key-value store (AgentConfig.OpenBucket) and the
	// guest's bucket and cas handles.
	kv kvHandles

	// journal is a durable instance's oplog (journal.go); nil: not durable.
	journal *journal
	// ready is set by the journal while a function of handsOff runs: the
	// wait for its started entry, before which its call is not issued.
	ready func() error

	// image is the instance's mapping of its memory image; the first recv
	// teaches its write set (package prefault), then it is cleared.
	image *prefault.Mapping
}

// handleTable is an instance's tooling and provider handles, by the
// number the guest holds; next is the last number given to any handle of
// the instance (its buckets and cas handles too).
type handleTable struct {
	tools map[uint32]*contract.Handle
	provs map[uint32]*contract.ProviderHandle
	next  uint32
}

// kvHandles is an instance's key-value store: open is its store.open
// (nil: no store), buckets and cases the guest's bucket and cas handles.
type kvHandles struct {
	open    func(identifier string) (*kv.Bucket, error)
	buckets map[uint32]*kv.Bucket
	cases   map[uint32]*kv.CAS
}

// started is called at the guest's first wait for input: its start is over.
func (st *agentState) started() {
	m := st.image
	st.image = nil
	if n, err := m.Learn(); err != nil {
		st.log.Debug("start write set not learnt", zap.Error(err))
	} else if n > 0 {
		st.log.Debug("start write set learnt", zap.Int("pages", n))
	}
}

// closeHandles drops every handle the guest still holds.
func (st *agentState) closeHandles() {
	for rep, h := range st.handles.tools {
		h.Close()
		delete(st.handles.tools, rep)
	}
	for rep, ph := range st.handles.provs {
		ph.Close()
		delete(st.handles.provs, rep)
	}
	clear(st.kv.buckets)
	clear(st.kv.cases)
}

func stateOf(c *wt.Caller) *agentState { return c.Data().(*agentState) }

// errBadArgs is a host-side defect or a guest built against another WIT:
// the call traps.
var errBadArgs = errors.New("arguments do not match toolhost:agent")

// attrReceived is what a recv's span got (receivedKind).
const attrReceived = attribute.Key("toolhost.inbox.received")

func argString(args []wt.Val, i int) (string, error) {
	if i < len(args) {
		if s, ok := args[i].(wt.String); ok {
			return string(s), nil
		}
	}
	return "", fmt.Errorf("%w: argument %d is not a string", errBadArgs, i)
}

// selfArg resolves the `self` borrow of a method of the host resource typ
// (what names it in errors) among the guest's handles.
func selfArg[H any](handles map[uint32]H, typ uint32, what string, args []wt.Val) (H, error) {
	var zero H
	if len(args) > 0 {
		if r, ok := args[0].(wt.ResourceHost); ok && r.Type == typ {
			if h, ok := handles[r.Rep]; ok {
				return h, nil
			}
			return zero, fmt.Errorf("unknown %s handle %d", what, r.Rep)
		}
	}
	return zero, fmt.Errorf("%w: self is not a %s handle", errBadArgs, what)
}

// methodOf adapts the body of a method of a host resource to a HostFunc:
// self resolves through resolve, the other arguments go to body.
func methodOf[H any](resolve func(st *agentState, args []wt.Val) (H, error), body func(st *agentState, h H, args []wt.Val) (wt.Val, error)) wt.HostFunc {
	return func(c *wt.Caller, args []wt.Val, results []wt.Val) error {
		st := stateOf(c)
		h, err := resolve(st, args)
		if err != nil {
			return err
		}
		v, err := body(st, h, args[1:])
		if err != nil {
			return err
		}
		results[0] = v
		return nil
	}
}

// method adapts a tooling method body to a HostFunc.
func method(body func(st *agentState, h *contract.Handle, args []wt.Val) (wt.Val, error)) wt.HostFunc {
	return methodOf(func(st *agentState, args []wt.Val) (*contract.Handle, error) {
		return selfArg(st.handles.tools, toolingType, "tooling", args)
	}, body)
}

// defineImports puts every version of toolhost:agent into l, and the
// key-value store (wasi:keyvalue) that 0.3.0 imports.
func defineImports(l *wt.Linker) error {
	root := l.Root()
	for _, w := range worlds {
		if _, err := root.Instance(w.types); err != nil {
			return err
		}
		if err := defineTooling(root, w.tooling); err != nil {
			return err
		}
		if w.provider != "" {
			if err := defineProvider(root, w.provider); err != nil {
				return err
			}
		}
		if w.messages != "" {
			if err := defineMessages(root, w.messages); err != nil {
				return err
			}
		}
		if err := defineInbox(root, w.inbox); err != nil {
			return err
		}
		if err := defineLog(root, w.log); err != nil {
			return err
		}
	}
	return defineKeyValue(root)
}

// keep puts h in the agent's table m (handles, provs, buckets, cases)
// under a new rep and returns the guest's owned handle of resource typ.
func keep[H any](st *agentState, m map[uint32]H, typ uint32, h H) wt.ResourceHost {
	st.handles.next++
	m[st.handles.next] = h
	return wt.ResourceHost{Type: typ, Rep: st.handles.next, Owned: true}
}

func defineTooling(root *wt.LinkerInstance, iface string) error {
	li, err := root.Instance(iface)
	if err != nil {
		return err
	}
	dtor := func(c *wt.Caller, rep uint32) error {
		st := stateOf(c)
		if h, ok := st.handles.tools[rep]; ok {
			h.Close()
			delete(st.handles.tools, rep)
		}
		return nil
	}
	if err := li.AddResource("tooling", toolingType, dtor); err != nil {
		return err
	}
	funcs := map[string]wt.HostFunc{
		"get": func(c *wt.Caller, args []wt.Val, results []wt.Val) error {
			st := stateOf(c)
			name, err := argString(args, 0)
			if err != nil {
				return err
			}
			h, err := st.pa.Get(name)
			if err != nil {
				results[0] = errResult(err)
				return nil
			}
			results[0] = wt.Ok(keep(st, st.handles.tools, toolingType, h))
			return nil
		},
		"[method]tooling.kind": method(func(_ *agentState, h *contract.Handle, _ []wt.Val) (wt.Val, error) {
			return wt.String(h.Kind()), nil
		}),
		"[method]tooling.name": method(func(_ *agentState, h *contract.Handle, _ []wt.Val) (wt.Val, error) {
			return wt.String(h.Name()), nil
		}),
		"[method]tooling.list-tools": method(func(st *agentState, h *contract.Handle, _ []wt.Val) (wt.Val, error) {
			ts, err := h.ListTools(st.stopping)
			if err != nil {
				return errResult(err), nil
			}
			return wt.Ok(toolList(ts)), nil
		}),
		"[method]tooling.call-tool": method(func(_ *agentState, h *contract.Handle, args []wt.Val) (wt.Val, error) {
			name, args2, err := twoStrings(args)
			if err != nil {
				return nil, err
			}
			id, err := h.CallTool(name, args2)
			if err != nil {
				return errResult(err), nil
			}
			return wt.Ok(wt.String(id)), nil
		}),
		"[method]tooling.is-open": method(func(_ *agentState, h *contract.Handle, args []wt.Val) (wt.Val, error) {
			id, err := argString(args, 0)
			if err != nil {
				return nil, err
			}
			return wt.Bool(h.IsOpen(id)), nil
		}),
		"[method]tooling.cancel": method(func(_ *agentState, h *contract.Handle, args []wt.Val) (wt.Val, error) {
			id, err := argString(args, 0)
			if err != nil {
				return nil, err
			}
			return wt.Bool(h.Cancel(id)), nil
		}),
		"[method]tooling.call-tool-blocking": method(func(st *agentState, h *contract.Handle, args []wt.Val) (wt.Val, error) {
			name, args2, err := twoStrings(args)
			if err != nil {
				return nil, err
			}
			res, err := h.CallToolBlockingAfter(st.stopping, name, args2, st.ready)
			if err != nil {
				return errResult(err), nil
			}
			return wt.Ok(toolResultVal(res)), nil
		}),
		"[method]tooling.list-resources": method(func(st *agentState, h *contract.Handle, _ []wt.Val) (wt.Val, error) {
			rs, err := h.ListResources(st.stopping)
			if err != nil {
				return errResult(err), nil
			}
			return wt.Ok(resourceInfoList(rs)), nil
		}),
		"[method]tooling.read-resource": method(func(st *agentState, h *contract.Handle, args []wt.Val) (wt.Val, error) {
			uri, err := argString(args, 0)
			if err != nil {
				return nil, err
			}
			c, err := h.ReadResource(st.stopping, uri)
			if err != nil {
				return errResult(err), nil
			}
			return wt.Ok(resourceContentVal(c)), nil
		}),
		"[method]tooling.subscribe-resource-list": method(func(_ *agentState, h *contract.Handle, _ []wt.Val) (wt.Val, error) {
			id, err := h.SubscribeResourceList()
			if err != nil {
				return errResult(err), nil
			}
			return wt.Ok(wt.String(id)), nil
		}),
		"[method]tooling.unsubscribe-resource-list": method(func(_ *agentState, h *contract.Handle, args []wt.Val) (wt.Val, error) {
			id, err := argString(args, 0)
			if err != nil {
				return nil, err
			}
			return wt.Bool(h.UnsubscribeResourceList(id)), nil
		}),
		"[method]tooling.subscribe-resource": method(func(st *agentState, h *contract.Handle, args []wt.Val) (wt.Val, error) {
			uri, err := argString(args, 0)
			if err != nil {
				return nil, err
			}
			id, err := h.SubscribeResource(st.stopping, uri)
			if err != nil {
				return errResult(err), nil
			}
			return wt.Ok(wt.String(id)), nil
		}),
		"[method]tooling.unsubscribe-resource": method(func(_ *agentState, h *contract.Handle, args []wt.Val) (wt.Val, error) {
			id, err := argString(args, 0)
			if err != nil {
				return nil, err
			}
			return wt.Bool(h.UnsubscribeResource(id)), nil
		}),
	}
	return addFuncs(li, funcs)
}

func twoStrings(args []wt.Val) (string, string, error) {
	a, err := argString(args, 0)
	if err != nil {
		return "", "", err
	}
	b, err := argString(args, 1)
	return a, b, err
}

func defineInbox(root *wt.LinkerInstance, iface string) error {
	li, err := root.Instance(iface)
	if err != nil {
		return err
	}
	return addFuncs(li, map[string]wt.HostFunc{
		"recv": func(c *wt.Caller, args []wt.Val, results []wt.Val) error {
			st := stateOf(c)
			var timeout *time.Duration
			if len(args) != 1 {
				return fmt.Errorf("%w: recv takes one argument", errBadArgs)
			}
			opt, ok := args[0].(wt.Option)
			if !ok {
				return fmt.Errorf("%w: recv's timeout is not an option", errBadArgs)
			}
			if opt.Some != nil {
				ms, ok := opt.Some.(wt.U32)
				if !ok {
					return fmt.Errorf("%w: recv's timeout is not a u32", errBadArgs)
				}
				d := time.Duration(ms) * time.Millisecond
				timeout = &d
			}
			if st.image != nil {
				st.started()
			}
			var waited time.Time
			if st.pa.Traced() {
				waited = time.Now()
			}
			env, got := st.in.Recv(st.killed, timeout)
			if !waited.IsZero() {
				// A wait is a span of the message the agent works on, but
				// not each delta of a stream: its chat span (or the callee's
				// message) has the stream's time, and counts its deltas.
				if kind := receivedKind(env, got); kind != "chat-delta" && kind != "reply-delta" {
					st.pa.Waited("recv", waited, attrReceived.String(kind))
				}
			}
			if got {
				st.pa.Received(env)
			}
			v, err := envelopeOption(env, got)
			results[0] = v
			return err
		},
		"try-recv": func(c *wt.Caller, _ []wt.Val, results []wt.Val) error {
			st := stateOf(c)
			env, got := st.in.TryRecv()
			if got {
				st.pa.Received(env)
			}
			v, err := envelopeOption(env, got)
			results[0] = v
			return err
		},
		"pending": func(c *wt.Caller, _ []wt.Val, results []wt.Val) error {
			results[0] = wt.U32(stateOf(c).in.Pending())
			return nil
		},
	})
}

var logLevels = map[wt.Enum]zapcore.Level{
	"debug": zapcore.DebugLevel,
	"info":  zapcore.InfoLevel,
	"warn":  zapcore.WarnLevel,
	"error": zapcore.ErrorLevel,
}

func defineLog(root *wt.LinkerInstance, iface string) error {
	li, err := root.Instance(iface)
	if err != nil {
		return err
	}
	return li.AddFunc("write", journaled(iface, "write", func(c *wt.Caller, args []wt.Val, _ []wt.Val) error {
		if len(args) != 2 {
			return fmt.Errorf("%w: log.write takes two arguments", errBadArgs)
		}
		name, _ := args[0].(wt.Enum)
		lvl, ok := logLevels[name]
		if !ok {
			return fmt.Errorf("%w: unknown log level %v", errBadArgs, args[0])
		}
		msg, err := argString(args, 1)
		if err != nil {
			return err
		}
		st := stateOf(c)
		if ce := st.log.Check(lvl, ""); ce != nil && st.logs.allow() {
			if len(msg) > maxLine {
				msg = msg[:maxLine] + "…"
			}
			ce.Message = guestText(msg)
			ce.Write()
		}
		return nil
	}))
}

// addFuncs defines funcs in li, each journaled for durable instances.
func addFuncs(li *wt.LinkerInstance, funcs map[string]wt.HostFunc) error {
	for name, fn := range funcs {
		if err := li.AddFunc(name, journaled(li.Path(), name, fn)); err != nil {
			return fmt.Errorf("define %s: %w", name, err)
		}
	}
	return nil
}
