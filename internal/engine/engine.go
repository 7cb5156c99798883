package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/gateway"
	"github.com/toolhostd/toolhostd/internal/host/prefault"
	wt "github.com/toolhostd/toolhostd/internal/host/wasmtime"
)

// Options configure a Host.
type Options struct {
	// CacheDir holds compiled components; "" disables the compile cache.
	CacheDir string
	// Fuel makes the engine meter fuel, so that agents can have a fuel limit.
	// It slows guests down; enable it only when some agent sets one.
	Fuel bool
	// EpochTick is how often the engine's epoch advances: the bound on how
	// long a spinning guest runs after it is interrupted. Default 10ms.
	EpochTick time.Duration
	// Log receives the host's and the agents' log lines.
	Log *zap.Logger
	// StartConcurrency bounds how many agents instantiate at once (store,
	// instance); the rest wait their turn. Default: GOMAXPROCS.
	StartConcurrency int
	// Pooling, if set, makes the engine use wasmtime's pooling allocator.
	Pooling *wt.PoolingConfig
	// NoPrefault turns off making the pages an agent writes while it starts
	// present before it runs (package prefault): for comparisons.
	NoPrefault bool
	// Agent are the options every agent's contract.Agent is made with
	// (the audit log, the providers, the chat observer); each agent's
	// grants, policy and provider access follow from its AgentConfig.
	Agent []contract.Option
}

// Host runs agents on one wasmtime engine against one gateway hub.
type Host struct {
	engine *wt.Engine
	cache  *CompileCache
	hub    *gateway.Hub
	log    *zap.Logger
	// agentOpts are Options.Agent, with the log.
	agentOpts []contract.Option
	fp        string

	programs   programTable
	live       atomic.Int64 // Programs loaded and not released
	noPrefault bool
	starts     chan struct{} // a slot per instantiation in progress

	stopTicker context.CancelFunc
	ticker     sync.WaitGroup
	closeOnce  sync.Once
	released   chan struct{} // closed once the engine is released
}

// New creates a host: its engine, its compile cache and its epoch ticker.
// Close releases them.
func New(opts Options, hub *gateway.Hub) (*Host, error) {
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.EpochTick <= 0 {
		opts.EpochTick = 10 * time.Millisecond
	}
	if opts.StartConcurrency <= 0 {
		opts.StartConcurrency = runtime.GOMAXPROCS(0)
	}
	cfg := wt.EngineConfig{EpochInterruption: true, ConsumeFuel: opts.Fuel, OptLevel: wt.OptSpeed, ParallelCompilation: true, Pooling: opts.Pooling}
	eng, err := wt.NewEngine(cfg)
	if err != nil {
		return nil, err
	}
	h := &Host{
		engine:     eng,
		hub:        hub,
		log:        opts.Log.Named("host"),
		starts:     make(chan struct{}, opts.StartConcurrency),
		released:   make(chan struct{}),
		noPrefault: opts.NoPrefault,
		agentOpts:  append([]contract.Option{contract.WithLog(opts.Log)}, opts.Agent...),
		fp:         fmt.Sprintf("wasmtime %s; epoch=%v fuel=%v opt=%d", wt.Version, cfg.EpochInterruption, cfg.ConsumeFuel, cfg.OptLevel),
	}
	if opts.CacheDir != "" {
		if h.cache, err = OpenCompileCache(opts.CacheDir); err != nil {
			eng.Close()
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.stopTicker = cancel
	h.ticker.Add(1)
	go h.tick(ctx, opts.EpochTick)
	return h, nil
}

// agentOptions are the options of cfg's contract.Agent: the host's, then
// the agent's own.
func (h *Host) agentOptions(cfg AgentConfig) []contract.Option {
	return append(slices.Clip(h.agentOpts),
		contract.WithGrants(cfg.Grants), contract.WithPolicy(cfg.Policy), contract.WithProviderAccess(cfg.Providers),
		contract.WithMessaging(cfg.Messaging))
}

// tick advances the engine's epoch until ctx ends.
func (h *Host) tick(ctx context.Context, every time.Duration) {
	defer h.ticker.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.engine.IncrementEpoch()
		}
	}
}

// Cache is the compile cache, or nil when disabled.
func (h *Host) Cache() *CompileCache { return h.cache }

// Close stops the ticker and releases the engine. Programs and agents must
// be closed first. A load still compiling (see OpenContext) is not waited
// for: the engine is released when it ends, and Released tells when.
func (h *Host) Close() error {
	var err error
	h.closeOnce.Do(func() {
		h.stopTicker()
		h.ticker.Wait()
		if n := h.programs.closeAll(); n > 0 {
			h.log.Info("closed with components still compiling; the engine is released after them", zap.Int("compiling", n))
			return
		}
		err = h.releaseEngine()
	})
	return err
}

// releaseEngine releases the engine, once nothing can use it any more.
func (h *Host) releaseEngine() error {
	err := h.engine.Close()
	close(h.released)
	return err
}

// Live is how many Programs are loaded and not released.
func (h *Host) Live() int64 { return h.live.Load() }

// Released is closed once the host is closed and its engine released:
// after Close, or after the last compile Close did not wait for.
func (h *Host) Released() <-chan struct{} { return h.released }

// Program is a loaded agent component: compiled, checked against the
// contract, and linked with the host's imports. Many agents may run one
// Program at once.
type Program struct {
	Name     string
	receives bool // it imports toolhost:agent@0.3.0's inbox: it can be given messages
	comp     *wt.Component
	linker   *wt.Linker
	image    *prefault.Image // set when comp is mapped from a cache file
	share    *sharing        // set for a Program of Open
	live     *atomic.Int64   // the host's count of live Programs
	gone     atomic.Bool     // released
}

// Close releases the program; one of Open is released by the last of its
// users once its file changed or the host closed. Call it once per Load or
// Open.
func (p *Program) Close() error {
	if s := p.share; s != nil {
		s.t.mu.Lock()
		s.t.unrefLocked(p)
		s.t.mu.Unlock()
		return nil
	}
	return p.release()
}

func (p *Program) release() error {
	if p.gone.Swap(true) {
		return nil
	}
	p.live.Add(-1)
	if p.image != nil {
		p.image.Close()
	}
	return errors.Join(p.linker.Close(), p.comp.Close())
}

// LoadFile loads the component at path (see Load).
func (h *Host) LoadFile(path string) (*Program, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load agent: %w", err)
	}
	return h.Load(path, b)
}

// Load compiles (or takes from the compile cache) a component and checks
// that it exports `run: func(string) -> result<string, string>` and that
// its imports of toolhost:agent (0.1.0 or 0.2.0) have the host's types. Imports
// the host does not provide are defined as traps: the agent fails only if
// it calls one.
func (h *Host) Load(name string, component []byte) (*Program, error) {
	if err := checkComponentBytes(component); err != nil {
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	start := time.Now()
	c, err := h.compile(name, component)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	comp := c.comp
	if err := errors.Join(checkExports(comp), checkImports(comp)); err != nil {
		comp.Close()
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	l, err := h.link(comp)
	if err != nil {
		comp.Close()
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	h.log.Debug("component loaded", zap.String("component", name), zap.Bool("cached", c.cached), zap.Duration("duration", time.Since(start)))
	p := &Program{Name: name, comp: comp, linker: l, live: &h.live}
	if p.receives, err = receivesMessages(comp); err != nil {
		l.Close()
		comp.Close()
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	if c.mapped != "" && !h.noPrefault {
		if p.image, err = prefault.Open(c.mapped); err != nil {
			h.log.Debug("no prefault", zap.String("component", name), zap.Error(err))
		}
	}
	h.live.Add(1)
	return p, nil
}

// Precompile fills the compile cache with the component at path, as Open
// and Load would on a first start, and checks it against the contract as
// they do; it reports whether the cache already held it. It needs a cache.
func (h *Host) Precompile(path string) (cached bool, err error) {
	if h.cache == nil {
		return false, errors.New("precompile: no compile cache")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("precompile: %w", err)
	}
	if err := checkComponentBytes(b); err != nil {
		return false, fmt.Errorf("precompile %s: %w", path, err)
	}
	c, putErr, err := h.compileCached(path, b)
	if err != nil {
		return false, fmt.Errorf("precompile %s: %w", path, err)
	}
	cached, comp := c.cached, c.comp
	defer comp.Close()
	if putErr != nil {
		return false, fmt.Errorf("precompile %s: %w", path, putErr)
	}
	if err := errors.Join(checkExports(comp), checkImports(comp)); err != nil {
		return cached, fmt.Errorf("precompile %s: %w", path, err)
	}
	return cached, nil
}

// compiled is a compiled component and where it came from.
type compiled struct {
	comp *wt.Component
	// mapped is the cache file wasmtime maps comp from ("": comp is in
	// memory, the cache is off or could not be written).
	mapped string
	cached bool // the cache held it before
}

// compile returns the compiled component, from the cache when it has a
// sound entry; a refused entry is dropped and recompiled. A cache entry
// that cannot be written is logged: the component still runs.
func (h *Host) compile(name string, component []byte) (compiled, error) {
	c, putErr, err := h.compileCached(name, component)
	if putErr != nil {
		h.log.Warn("compile cache not written", zap.Error(putErr))
	}
	return c, err
}

// compileCached is compile, returning the failure to write the cache entry
// (putErr) apart.
func (h *Host) compileCached(name string, component []byte) (c compiled, putErr, err error) {
	if h.cache == nil {
		c.comp, err = h.compileLogged(name, component)
		return c, nil, err
	}
	key := h.cache.Key(component, h.fp)
	if path, ok := h.cache.Lookup(key); ok {
		// Lookup has checked the entry's checksum. wasmtime maps the file
		// itself (it ignores the trailer): for a componentize-js agent
		// that takes milliseconds, where deserializing the same 50 MB from
		// a buffer takes about half a second.
		comp, err := wt.DeserializeComponentFile(h.engine, path)
		if err == nil {
			return compiled{comp: comp, mapped: path, cached: true}, nil, nil
		}
		h.log.Warn("compile cache entry refused; recompiling", zap.String("key", key), zap.Error(err))
		h.cache.Invalidate(key)
	}
	if c.comp, err = h.compileLogged(name, component); err != nil {
		return c, nil, err
	}
	art, err := c.comp.Serialize()
	if err == nil {
		err = h.cache.Put(key, art)
	}
	if err != nil {
		return c, err, nil
	}
	// Run from the entry just written, as later starts will: its memory
	// image is then the file's pages (shared by every instance, and what
	// package prefault works on) instead of a copy in memory.
	if comp, err := wt.DeserializeComponentFile(h.engine, h.cache.path(key)); err == nil {
		c.comp.Close()
		c.comp, c.mapped = comp, h.cache.path(key)
	}
	return c, nil, nil
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

// link builds the component's linker: WASI p2, toolhost:agent, and traps
// for every other import.
func (h *Host) link(c *wt.Component) (*wt.Linker, error) {
	l, err := wt.NewLinker(h.engine)
	if err != nil {
		return nil, err
	}
	err = l.AddWASIP2()
	if err == nil {
		err = defineImports(l)
	}
	if err == nil {
		err = defineUnprovided(l, c)
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// wasiPackages are the WASI p2 packages wasmtime's AddWASIP2 provides.
var wasiPackages = map[string]bool{"cli": true, "io": true, "clocks": true, "random": true, "filesystem": true, "sockets": true}

// provided reports whether an import is defined by AddWASIP2 or by
// defineImports.
func provided(name string) bool {
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
