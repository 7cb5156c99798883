package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/engine/prefault"
	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// Options configure an Engine.
type Options struct {
	// CacheDir holds compiled components; "" disables the compile cache.
	CacheDir string
	// Fuel makes the engine meter fuel, so that agents can have a fuel limit.
	// It slows guests down; enable it only when some agent sets one.
	Fuel bool
	// EpochTick is how often the engine's epoch advances: the bound on how
	// long a spinning guest runs after it is interrupted. Default 10ms.
	EpochTick time.Duration
	// Log receives the engine's log lines.
	Log *zap.Logger
	// Pooling, if set, makes the engine use wasmtime's pooling allocator.
	Pooling *wt.PoolingConfig
	// NoPrefault turns off making the pages an instance writes while it
	// starts present before it runs (package prefault): for comparisons.
	NoPrefault bool
	// Check refuses a compiled component that does not fit the runtime on
	// top (package host: the toolhost:agent world). Load and Precompile
	// call it; nil accepts every component.
	Check func(*wt.Component) error
	// Link makes a checked component's linker (package host: WASI, the
	// world's imports, stubs for the rest), and what the runtime keeps
	// beside it (Program.Meta). Load calls it; without it Load fails.
	Link func(*wt.Engine, *wt.Component) (l *wt.Linker, meta any, err error)
}

// Engine is one wasmtime engine with its epoch ticker and its compile
// cache, and the Programs loaded on it.
type Engine struct {
	engine *wt.Engine
	cache  *CompileCache
	log    *zap.Logger
	fp     string
	check  func(*wt.Component) error
	link   func(*wt.Engine, *wt.Component) (*wt.Linker, any, error)

	programs   programTable
	live       atomic.Int64 // Programs loaded and not released
	noPrefault bool

	ticker    ticker
	closeOnce sync.Once
	released  chan struct{} // closed once the engine is released
}

// ticker is the goroutine advancing the engine's epoch (tick): stop ends
// it, running waits for it.
type ticker struct {
	stop    context.CancelFunc
	running sync.WaitGroup
}

// New creates an engine, its compile cache and its epoch ticker. Close
// releases them.
func New(opts Options) (*Engine, error) {
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.EpochTick <= 0 {
		opts.EpochTick = 10 * time.Millisecond
	}
	cfg := wt.EngineConfig{EpochInterruption: true, ConsumeFuel: opts.Fuel, OptLevel: wt.OptSpeed, ParallelCompilation: true, Pooling: opts.Pooling}
	eng, err := wt.NewEngine(cfg)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		engine:     eng,
		log:        opts.Log.Named("engine"),
		check:      opts.Check,
		link:       opts.Link,
		released:   make(chan struct{}),
		noPrefault: opts.NoPrefault,
		fp:         fmt.Sprintf("wasmtime %s; epoch=%v fuel=%v opt=%d", wt.Version, cfg.EpochInterruption, cfg.ConsumeFuel, cfg.OptLevel),
	}
	if opts.CacheDir != "" {
		if e.cache, err = OpenCompileCache(opts.CacheDir); err != nil {
			eng.Close()
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.ticker.stop = cancel
	e.ticker.running.Add(1)
	go e.tick(ctx, opts.EpochTick)
	return e, nil
}

// tick advances the engine's epoch until ctx ends.
func (e *Engine) tick(ctx context.Context, every time.Duration) {
	defer e.ticker.running.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			e.engine.IncrementEpoch()
		}
	}
}

// Wasmtime is the wasmtime engine, for the stores instances run in.
func (e *Engine) Wasmtime() *wt.Engine { return e.engine }

// Cache is the compile cache, or nil when disabled.
func (e *Engine) Cache() *CompileCache { return e.cache }

// Fingerprint names the engine settings that change compiled code: the
// compile cache's keys and the content keys are made under it.
func (e *Engine) Fingerprint() string { return e.fp }

// Close stops the ticker and releases the engine. Programs and their
// instances must be closed first. A load still compiling (see OpenContext)
// is not waited for: the engine is released when it ends, and Released
// tells when.
func (e *Engine) Close() error {
	var err error
	e.closeOnce.Do(func() {
		e.ticker.stop()
		e.ticker.running.Wait()
		if n := e.programs.closeAll(); n > 0 {
			e.log.Info("closed with components still compiling; the engine is released after them", zap.Int("compiling", n))
			return
		}
		err = e.releaseEngine()
	})
	return err
}

// releaseEngine releases the engine, once nothing can use it any more.
func (e *Engine) releaseEngine() error {
	err := e.engine.Close()
	close(e.released)
	return err
}

// Live is how many Programs are loaded and not released.
func (e *Engine) Live() int64 { return e.live.Load() }

// Released is closed once the engine is closed and released: after Close,
// or after the last compile Close did not wait for.
func (e *Engine) Released() <-chan struct{} { return e.released }

// Program is a loaded component: compiled, checked (Options.Check) and
// linked (Options.Link). Many instances may run one Program at once.
type Program struct {
	Name  string
	comp  *wt.Component
	meta  any // what Options.Link returned beside the linker
	link  *wt.Linker
	image *prefault.Image // set when comp is mapped from a cache file
	share *sharing        // set for a Program of Open
	live  *atomic.Int64   // the engine's count of live Programs
	gone  atomic.Bool     // released
	// cached: the compile cache held the component when it was loaded.
	cached bool
}

// Component is the compiled component.
func (p *Program) Component() *wt.Component { return p.comp }

// FromCache reports whether the component came from the compile cache
// when it was loaded (false: it was compiled).
func (p *Program) FromCache() bool { return p.cached }

// Meta is what Options.Link returned beside the linker.
func (p *Program) Meta() any { return p.meta }

// Image is the prefault image of the component's memory, or nil (it is
// not mapped from a cache file, or Options.NoPrefault).
func (p *Program) Image() *prefault.Image { return p.image }

// Instantiate instantiates p in store; with p's Image, under it (package
// prefault), returning the instance's mapping of the memory image (nil when
// none was found).
func (p *Program) Instantiate(store *wt.Store) (*wt.Instance, *prefault.Mapping, error) {
	if p.image == nil {
		inst, err := p.link.Instantiate(store, p.comp)
		return inst, nil, err
	}
	var inst *wt.Instance
	m, err := p.image.Instantiate(func() error {
		var err error
		inst, err = p.link.Instantiate(store, p.comp)
		return err
	})
	return inst, m, err
}

// Close releases the program; one of Open is released by the last of its
// users once its file changed or the engine closed. Call it once per Load
// or Open.
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
	return errors.Join(p.link.Close(), p.comp.Close())
}

// LoadFile loads the component at path (see Load).
func (e *Engine) LoadFile(path string) (*Program, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load agent: %w", err)
	}
	return e.Load(path, b)
}

// Load compiles (or takes from the compile cache) a component, checks it
// (Options.Check) and links it (Options.Link).
func (e *Engine) Load(name string, component []byte) (*Program, error) {
	if err := checkComponentBytes(component); err != nil {
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	if e.link == nil {
		return nil, fmt.Errorf("load %s: %w", name, ErrNoLink)
	}
	start := time.Now()
	c, err := e.compile(name, component)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	comp := c.comp
	if err := e.checkComponent(comp); err != nil {
		comp.Close()
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	l, meta, err := e.link(e.engine, comp)
	if err != nil {
		comp.Close()
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	e.log.Debug("component loaded", zap.String("component", name), zap.Bool("cached", c.cached), zap.Duration("duration", time.Since(start)))
	p := &Program{Name: name, comp: comp, meta: meta, link: l, live: &e.live, cached: c.cached}
	if c.mapped != "" && !e.noPrefault {
		if p.image, err = prefault.Open(c.mapped); err != nil {
			e.log.Debug("no prefault", zap.String("component", name), zap.Error(err))
		}
	}
	e.live.Add(1)
	return p, nil
}

// checkComponent is Options.Check, when there is one.
func (e *Engine) checkComponent(c *wt.Component) error {
	if e.check == nil {
		return nil
	}
	return e.check(c)
}

// Precompile fills the compile cache with the component at path, as Open
// and Load would on a first start, and checks it as they do; it reports
// whether the cache already held it. It needs a cache.
func (e *Engine) Precompile(path string) (cached bool, err error) {
	if e.cache == nil {
		return false, errors.New("precompile: no compile cache")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("precompile: %w", err)
	}
	if err := checkComponentBytes(b); err != nil {
		return false, fmt.Errorf("precompile %s: %w", path, err)
	}
	c, putErr, err := e.compileCached(path, b)
	if err != nil {
		return false, fmt.Errorf("precompile %s: %w", path, err)
	}
	cached, comp := c.cached, c.comp
	defer comp.Close()
	if putErr != nil {
		return false, fmt.Errorf("precompile %s: %w", path, putErr)
	}
	if err := e.checkComponent(comp); err != nil {
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
func (e *Engine) compile(name string, component []byte) (compiled, error) {
	c, putErr, err := e.compileCached(name, component)
	if putErr != nil {
		e.log.Warn("compile cache not written", zap.Error(putErr))
	}
	return c, err
}

// compileCached is compile, returning the failure to write the cache entry
// (putErr) apart.
func (e *Engine) compileCached(name string, component []byte) (c compiled, putErr, err error) {
	if e.cache == nil {
		c.comp, err = e.compileLogged(name, component)
		return c, nil, err
	}
	key := e.cache.Key(component, e.fp)
	if path, ok := e.cache.Lookup(key); ok {
		// Lookup has checked the entry's checksum. wasmtime maps the file
		// itself (it ignores the trailer): for a componentize-js agent
		// that takes milliseconds, where deserializing the same 50 MB from
		// a buffer takes about half a second.
		comp, err := wt.DeserializeComponentFile(e.engine, path)
		if err == nil {
			return compiled{comp: comp, mapped: path, cached: true}, nil, nil
		}
		e.log.Warn("compile cache entry refused; recompiling", zap.String("key", key), zap.Error(err))
		e.cache.Invalidate(key)
	}
	if c.comp, err = e.compileLogged(name, component); err != nil {
		return c, nil, err
	}
	art, err := c.comp.Serialize()
	if err == nil {
		err = e.cache.Put(key, art)
	}
	if err != nil {
		return c, err, nil
	}
	// Run from the entry just written, as later starts will: its memory
	// image is then the file's pages (shared by every instance, and what
	// package prefault works on) instead of a copy in memory.
	if comp, err := wt.DeserializeComponentFile(e.engine, e.cache.Path(key)); err == nil {
		c.comp.Close()
		c.comp, c.mapped = comp, e.cache.Path(key)
	}
	return c, nil, nil
}
