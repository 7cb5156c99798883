package host

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/engine"
	"github.com/toolhostd/toolhostd/internal/gateway"
	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// Options configure a Host.
type Options struct {
	// Engine are the settings of the host's engine (its compile cache,
	// fuel, epoch tick, pooling, prefault); its Check and Link are the
	// host's, and its Log is Log when unset.
	Engine engine.Options
	// Log receives the host's and the agents' log lines.
	Log *zap.Logger
	// StartConcurrency bounds how many agents instantiate at once (store,
	// instance); the rest wait their turn. Default: GOMAXPROCS.
	StartConcurrency int
	// Agent are the options every agent's contract.Agent is made with
	// (the audit log, the providers, the chat observer); each agent's
	// grants, policy and provider access follow from its AgentConfig.
	// Its Log is Log when unset.
	Agent contract.Options
}

// EngineOptions are the engine options of opts: its Engine settings, with
// the host's check of the toolhost:agent world and its linking.
func EngineOptions(opts Options) engine.Options {
	o := opts.Engine
	if o.Log == nil {
		o.Log = opts.Log
	}
	o.Check, o.Link = Check, link
	return o
}

// Host runs agents against one gateway hub on an engine of its own, made
// with the host's Check and link (EngineOptions): the Programs the engine
// loads are linked to the host's imports, and whether one receives
// messages is kept beside its linker (Program.Meta).
type Host struct {
	*engine.Engine
	hub *gateway.Hub
	log *zap.Logger
	// agentOpts are Options.Agent, with the log.
	agentOpts contract.Options
	starts    chan struct{} // a slot per instantiation in progress
}

// Program is a loaded agent component (package engine), linked with the
// host's imports.
type Program = engine.Program

// New creates a host and its engine (its compile cache and its epoch
// ticker). Close releases them.
func New(opts Options, hub *gateway.Hub) (*Host, error) {
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.StartConcurrency <= 0 {
		opts.StartConcurrency = runtime.GOMAXPROCS(0)
	}
	if opts.Agent.Log == nil {
		opts.Agent.Log = opts.Log
	}
	eng, err := engine.New(EngineOptions(opts))
	if err != nil {
		return nil, err
	}
	return &Host{
		Engine:    eng,
		hub:       hub,
		log:       opts.Log.Named("host"),
		starts:    make(chan struct{}, opts.StartConcurrency),
		agentOpts: opts.Agent,
	}, nil
}

// agentOptions are the options of cfg's contract.Agent: the host's, with
// the agent's own grants, policy, provider access and messaging.
func (h *Host) agentOptions(cfg AgentConfig) contract.Options {
	o := h.agentOpts
	o.Grants, o.Policy, o.ProviderAccess, o.Messaging = cfg.Grants, cfg.Policy, cfg.Providers, cfg.Messaging
	if cfg.Durable.Oplog != nil {
		o.MailJournal = mailJournal{cfg.Durable.Oplog}
	}
	return o
}

// Check refuses a component that does not fit the toolhost:agent world:
// it must export `run: func(string) -> result<string, string>`, and its
// imports of toolhost:agent (0.1.0, 0.2.0 or 0.3.0) and of
// wasi:keyvalue@0.2.0-draft2 must have the host's types. Imports the host does not provide are defined as traps when it is
// linked: the agent fails only if it calls one.
func Check(c *wt.Component) error {
	return errors.Join(checkExports(c), checkImports(c))
}

// linked is what the host keeps beside a Program's linker (Program.Meta).
type linked struct {
	receives bool // it imports toolhost:agent@0.3.0's inbox: it can be given messages
}

// Receives reports whether p's agents can be given messages: it imports
// toolhost:agent@0.3.0's inbox.
func Receives(p *Program) bool {
	l, _ := p.Meta().(linked)
	return l.receives
}

// checkExports refuses a component without the contract's run export.
func checkExports(c *wt.Component) error {
	exports, err := c.Exports()
	if err != nil {
		return err
	}
	for _, it := range exports {
		if it.Name != "run" {
			continue
		}
		if it.Kind != wt.ItemFunc || it.Func == nil {
			return fmt.Errorf("%w: export `run` is a %s, want func(input: string) -> result<string, string>", ErrBadComponent, it.Kind)
		}
		if !isRunType(it.Func) {
			return fmt.Errorf("%w: export `run` has type %s, want func(input: string) -> result<string, string>", ErrBadComponent, it.Func)
		}
		return nil
	}
	return fmt.Errorf("%w: no export `run: func(input: string) -> result<string, string>` (the toolhost:agent world)", ErrBadComponent)
}

func isRunType(f *wt.FuncType) bool {
	isString := func(t *wt.Type) bool { return t != nil && t.Kind == wt.TypeString }
	r := f.Result
	return len(f.Params) == 1 && isString(f.Params[0].Type) &&
		r != nil && r.Kind == wt.TypeResult && isString(r.Ok) && isString(r.Err)
}

// link builds the component's linker: WASI p2 (its clocks and random
// the host's own, wasiclock.go), toolhost:agent, and traps
// for every other import (engine.Options.Link); beside it, whether the
// component receives messages.
func link(eng *wt.Engine, c *wt.Component) (*wt.Linker, any, error) {
	recv, err := receivesMessages(c)
	if err != nil {
		return nil, nil, err
	}
	l, err := wt.NewLinker(eng)
	if err != nil {
		return nil, nil, err
	}
	err = l.AddWASIP2()
	if err == nil {
		err = defineCapturedWASI(l, c)
	}
	if err == nil {
		err = defineImports(l)
	}
	if err == nil {
		err = defineUnprovided(l, c)
	}
	if err != nil {
		l.Close()
		return nil, nil, err
	}
	return l, linked{receives: recv}, nil
}

// wasiPackages are the WASI p2 packages wasmtime's AddWASIP2 provides.
var wasiPackages = map[string]bool{"cli": true, "io": true, "clocks": true, "random": true, "filesystem": true, "sockets": true}

// provided reports whether an import is defined by AddWASIP2 or by
// defineImports.
func provided(name string) bool {
	switch name {
	case kvStore, kvAtomics, kvBatch:
		return true
	}
	for _, w := range worlds {
		switch name {
		case w.types, w.tooling, w.inbox, w.log:
			return true
		case w.provider, w.messages:
			return name != ""
		}
	}
	if rest, ok := strings.CutPrefix(name, "wasi:"); ok {
		pkg, _, _ := strings.Cut(rest, "/")
		return wasiPackages[pkg]
	}
	return false
}

// unprovidedType tags the stand-in resources of imports the host does not
// provide; one type for all, so that types shared between such interfaces
// stay equal.
const unprovidedType uint32 = 0xFFFF_FFFF

// defineUnprovided defines every import of c that the host does not provide
// (wasi:http, say) with functions that trap when called, so that a
// component which only mentions them still runs. wasmtime's own
// define-unknown-imports-as-traps cannot be used: it redefines instances the
// linker already has.
func defineUnprovided(l *wt.Linker, c *wt.Component) error {
	imports, err := c.Imports()
	if err != nil {
		return err
	}
	root := l.Root()
	for _, it := range imports {
		if provided(it.Name) {
			continue
		}
		if err := defineStub(root, it, it.Name); err != nil {
			return fmt.Errorf("stub import %s: %w", it.Name, err)
		}
	}
	return nil
}

func defineStub(li *wt.LinkerInstance, it wt.Item, qualified string) error {
	switch it.Kind {
	case wt.ItemFunc:
		return li.AddFunc(it.Name, func(*wt.Caller, []wt.Val, []wt.Val) error {
			return fmt.Errorf("%w: %s", ErrUnprovidedImport, qualified)
		})
	case wt.ItemResource:
		return li.AddResource(it.Name, unprovidedType, nil)
	case wt.ItemInstance:
		inner, err := li.Instance(it.Name)
		if err != nil {
			return err
		}
		for _, ex := range it.Exports {
			if err := defineStub(inner, ex, qualified+"#"+ex.Name); err != nil {
				return err
			}
		}
		return nil
	case wt.ItemType:
		return nil
	}
	return fmt.Errorf("%w: cannot stand in for a %s import", ErrBadComponent, it.Kind)
}
