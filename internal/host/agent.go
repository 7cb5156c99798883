package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/engine/prefault"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/kv"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/oplog"
	"github.com/toolhostd/toolhostd/internal/policy"
	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// AgentConfig is what one agent run is allowed and given.
type AgentConfig struct {
	// Name identifies the agent in logs and is its WASI argv[0].
	Name string
	// Grants reports whether the agent may get a tooling; nil grants all.
	Grants func(tooling string) bool
	// Providers is what the agent may do with the host's providers (the
	// zero value: get any, requests audited without their text).
	Providers contract.ProviderAccess
	// Policy narrows what the agent may do on its granted toolings (which
	// tools, which resources, how many calls and how fast); nil: no
	// narrowing.
	Policy *policy.Agent
	// Env is the guest's WASI environment (nothing is inherited).
	Env map[string]string
	// Limits bound what the instance may use.
	Limits AgentLimits
	// OnStarted, if set, is called on the agent's goroutine once the
	// component is instantiated, with how long that took, before run.
	OnStarted func(instantiate time.Duration)
	// Messaging is how the agent sends messages (toolhost:agent@0.3.0);
	// the zero value: it cannot send. Messages to it come through its
	// Mailbox.
	Messaging contract.Messaging
	// OpenBucket is the agent's wasi:keyvalue store.open(identifier),
	// bound to its agent, session and store policy (kv.Service.Open); nil:
	// the agent has no key-value store, and every open fails.
	OpenBucket func(identifier string) (*kv.Bucket, error)
	// Durable, with an Oplog, makes the instance durable (journal.go).
	Durable Durability
}

// AgentLimits bound one agent run: its inbox, memory, work, time and log
// lines.
type AgentLimits struct {
	// InboxCapacity bounds open calls plus undelivered envelopes (default
	// config.DefaultInboxCapacity).
	InboxCapacity int
	// MemoryLimit caps each linear memory in bytes; 0: unlimited.
	MemoryLimit uint64
	// Fuel bounds the guest's work when the host meters fuel; 0: unlimited.
	Fuel uint64
	// RunTimeout bounds run; 0: unlimited.
	RunTimeout time.Duration
	// StopGrace is how long a stopped agent has to return from run after
	// its shutdown envelope before it is interrupted.
	StopGrace time.Duration
	// LogRate bounds the guest's log lines (log.write, stdout and stderr
	// lines) per second, LogBurst at once; 0: unlimited. OnLogDropped, if
	// set, is called for each line dropped.
	LogRate      float64
	LogBurst     int
	OnLogDropped func()
}

// Durability is what makes an instance durable: its oplog, its bounds and
// a hook for the end of its replay. The zero value: not durable.
type Durability struct {
	// Oplog, if set, makes the instance durable (journal.go): each host
	// call's result is recorded in it (a call with an effect outside the
	// host as started, durably, before it is issued), and what it recorded
	// before is replayed first. It was opened with the
	// program's Content as its header's component; the caller closes it,
	// or deletes it once the instance ended for good.
	Oplog *oplog.Log
	// MaxEntries and MaxBytes bound the oplog (0: unbounded): the call
	// that reaches either traps with ErrOplogFull.
	MaxEntries int
	MaxBytes   int64
	// OnReplayed, if set, is called on the agent's goroutine when the
	// replay of a durable instance ends, with the entries it replayed.
	OnReplayed func(entries int, took time.Duration)
}

// lifecycle is how an Agent is stopped: asked (stopping), then cut off
// (killed, an interrupt of its store), and which phase it was in.
type lifecycle struct {
	stopping   context.Context
	stop       context.CancelFunc
	killed     context.Context
	kill       context.CancelFunc
	stopOnce   sync.Once
	interrupts atomic.Pointer[wt.Store] // set while the guest may run
	reason     atomic.Pointer[error]    // why the host interrupted it

	phase     sync.Mutex
	stopAsked bool // Stop was called
	inRun     bool // run was called: a Stop gives it the grace
}

// RunError is the err of the guest's run: its own failure message.
type RunError struct{ Message string }

func (e *RunError) Error() string { return e.Message }

// Agent is one running instance of a Program.
type Agent struct {
	name     string
	cfg      AgentConfig
	in       *inbox.Inbox
	log      *zap.Logger
	pa       *contract.Agent
	receives bool     // the program can be given messages
	journal  *journal // a durable instance's (journal.go); nil: not durable

	life lifecycle // how it is stopped

	done chan struct{}
	out  string
	err  error
}

// Start instantiates p in a new store and calls run(input) on a goroutine
// that owns the store. Wait returns the outcome; Stop ends it early.
func (h *Host) Start(p *Program, cfg AgentConfig, input string) *Agent {
	if cfg.Limits.InboxCapacity <= 0 {
		cfg.Limits.InboxCapacity = config.DefaultInboxCapacity
	}
	a := &Agent{
		name: cfg.Name,
		cfg:  cfg,
		in:   inbox.New(cfg.Limits.InboxCapacity),
		log:  h.log.Named("agent").With(zap.String("agent", cfg.Name)),
		done: make(chan struct{}),
	}
	a.life.stopping, a.life.stop = context.WithCancel(context.Background())
	a.life.killed, a.life.kill = context.WithCancel(context.Background())
	a.pa = contract.NewAgent(h.hub, a.name, a.in, h.agentOptions(a.cfg))
	a.receives = Receives(p)
	if a.journal = newJournal(a.cfg, a.log); a.journal != nil {
		a.resumeMessages(a.journal) // before any message can be put
	}
	go a.main(h, p, input)
	return a
}

// Resumed are the ids of the messages a durable instance took over from
// its oplog at its start (accepted by the instance that was cut off, not
// ended), in the order they were accepted: the router has them.
func (a *Agent) Resumed() []string {
	if a.journal == nil {
		return nil
	}
	return a.journal.resumed
}

// Mailbox brings messages to the agent (see Receives).
func (a *Agent) Mailbox() *message.Mailbox { return a.pa.Mailbox() }

// Receives reports whether the agent's component can be given messages
// (it imports toolhost:agent@0.3.0's inbox); a message to one that cannot
// is refused, never dropped.
func (a *Agent) Receives() bool { return a.receives }

// Busy reports open work: a message not answered, a call, chat stream or
// send open, or an envelope undelivered.
func (a *Agent) Busy() bool { return a.pa.Busy() }

// Name is the agent's name.
func (a *Agent) Name() string { return a.name }

// Inbox is the agent's inbox.
func (a *Agent) Inbox() *inbox.Inbox { return a.in }

// Done is closed when the agent has ended and released everything it made.
func (a *Agent) Done() <-chan struct{} { return a.done }

// Wait blocks until the agent ends and returns run's ok string, or an error:
// *RunError for run's err, ErrInterrupted (wrapping the trap) when the host
// stopped it, a *wasmtime.Trap for a trap, or a load or host failure.
func (a *Agent) Wait() (string, error) {
	<-a.done
	return a.out, a.err
}

// Stop asks the agent to stop: it gets the shutdown envelope and blocking
// tooling operations fail with cancelled; after StopGrace it is interrupted.
// An agent whose run has not begun (waiting for a start slot, being
// instantiated) has nothing to wind down: it is interrupted at once.
// Stop returns at once; Wait for the end.
func (a *Agent) Stop() {
	a.life.stopOnce.Do(func() {
		a.life.phase.Lock()
		a.life.stopAsked = true
		inRun := a.life.inRun
		if !inRun { // set before enterRun can see stopAsked
			reason := fmt.Errorf("%w: stopped before its run began", ErrInterrupted)
			a.life.reason.CompareAndSwap(nil, &reason)
		}
		a.life.phase.Unlock()
		a.in.Shutdown()
		a.life.stop()
		switch {
		case !inRun:
			a.interrupt(nil) // the reason is set
			return
		case a.cfg.Limits.StopGrace <= 0:
			a.interrupt(fmt.Errorf("%w: stopped", ErrInterrupted))
			return
		}
		t := time.AfterFunc(a.cfg.Limits.StopGrace, func() {
			a.interrupt(fmt.Errorf("%w: did not return within the stop grace of %v", ErrInterrupted, a.cfg.Limits.StopGrace))
		})
		go func() { <-a.done; t.Stop() }()
	})
}

// Suspend ends a durable instance where it is, to be resumed from its
// oplog: it is interrupted at once, without the shutdown envelope, and
// what it waited on ends without being recorded (journal.go). Wait
// returns an error wrapping ErrSuspended. With leaveMessages (the host
// shuts down) the messages open to it stay open, for the host's next
// start to resume from the oplog; else they fail, as they do when any
// instance ends. Returns at once.
func (a *Agent) Suspend(leaveMessages bool) {
	if leaveMessages && a.journal != nil {
		a.pa.LeaveMessages()
	}
	a.life.stopOnce.Do(func() {
		a.life.phase.Lock()
		a.life.stopAsked = true
		a.life.phase.Unlock()
		a.interrupt(fmt.Errorf("%w: %w (its oplog resumes it)", ErrInterrupted, ErrSuspended))
	})
}

// enterRun marks the agent as in run, unless it was stopped before.
func (a *Agent) enterRun() bool {
	a.life.phase.Lock()
	defer a.life.phase.Unlock()
	if a.life.stopAsked {
		return false
	}
	a.life.inRun = true
	return true
}

// interrupt makes a running guest trap at the next epoch tick and wakes any
// host call it waits in. The first reason wins (nil: one set already).
func (a *Agent) interrupt(reason error) {
	if reason != nil {
		a.life.reason.CompareAndSwap(nil, &reason)
	}
	a.life.stop()
	a.life.kill()
	if s := a.life.interrupts.Load(); s != nil {
		s.Interrupt()
	}
}

func (a *Agent) main(h *Host, p *Program, input string) {
	defer close(a.done)
	st := &agentState{
		name:     a.name,
		pa:       a.pa,
		in:       a.in,
		log:      a.log,
		stopping: a.life.stopping,
		killed:   a.life.killed,
		handles: handleTable{
			tools: make(map[uint32]*contract.Handle),
			provs: make(map[uint32]*contract.ProviderHandle),
		},
		kv: kvHandles{
			open:    a.cfg.OpenBucket,
			buckets: make(map[uint32]*kv.Bucket),
			cases:   make(map[uint32]*kv.CAS),
		},
		journal: a.journal,
	}
	st.logs = newLogLimiter(a.cfg.Limits.LogRate, a.cfg.Limits.LogBurst, a.log, a.cfg.Limits.OnLogDropped)
	stdout := newLineLogger(a.log, "stdout")
	stderr := newLineLogger(a.log, "stderr")
	stdout.limit, stderr.limit = st.logs, st.logs
	defer func() {
		st.closeHandles()
		st.pa.CloseWith(a.endText())
		a.in.Shutdown()
		stdout.Flush()
		stderr.Flush()
		st.logs.flush()
		a.life.stop()
		a.life.kill()
	}()
	start := time.Now()
	a.out, a.err = a.run(h, p, st, input, stdout, stderr)
	if a.err != nil {
		// The first line only: the caller reports the whole error (with
		// a trap's backtrace) once.
		a.log.Warn("agent failed", zap.Duration("duration", time.Since(start)), zap.String("error", headline(a.err)))
	} else {
		a.log.Info("agent finished", zap.Duration("duration", time.Since(start)))
	}
}

// endText says why the agent ended, for the messages it leaves open.
func (a *Agent) endText() string {
	if a.err != nil {
		return fmt.Sprintf("agent %s stopped before replying: %s", a.name, headline(a.err))
	}
	return fmt.Sprintf("agent %s ended (its run returned) before replying", a.name)
}

func (a *Agent) run(h *Host, p *Program, st *agentState, input string, stdout, stderr *lineLogger) (string, error) {
	// A start slot, held until the instance exists.
	select {
	case h.starts <- struct{}{}:
	case <-a.life.killed.Done():
		if r := a.life.reason.Load(); r != nil {
			return "", *r
		}
		return "", ErrInterrupted
	}
	held := true
	release := func() {
		if held {
			held = false
			<-h.starts
		}
	}
	defer release()
	if err := checkOplog(p, a.cfg); err != nil {
		return "", err
	}
	store, err := wt.NewStore(h.Wasmtime(), wt.StoreConfig{
		WASI:        &wt.WASIConfig{Args: []string{a.name}, Env: a.cfg.Env, Stdout: stdout, Stderr: stderr},
		MemoryLimit: a.cfg.Limits.MemoryLimit,
		Fuel:        a.cfg.Limits.Fuel,
		Data:        st,
	})
	if err != nil {
		return "", fmt.Errorf("create store: %w", err)
	}
	var mapping *prefault.Mapping // the instance's memory image, once it exists
	defer func() {
		store.Close()
		mapping.Close() // after the store: it unmapped the memory
	}()
	if err := store.EnableInterrupt(); err != nil {
		return "", err
	}
	a.life.interrupts.Store(store)
	defer a.life.interrupts.Store(nil)
	if r := a.life.reason.Load(); r != nil { // stopped before the store existed
		return "", *r
	}
	if a.cfg.Limits.RunTimeout > 0 {
		t := time.AfterFunc(a.cfg.Limits.RunTimeout, func() {
			a.interrupt(fmt.Errorf("%w: run timeout of %v exceeded", ErrInterrupted, a.cfg.Limits.RunTimeout))
		})
		defer t.Stop()
	}
	instStart := time.Now()
	inst, m, err := p.Instantiate(store)
	if err != nil {
		return "", a.explain(fmt.Errorf("instantiate: %w", err))
	}
	mapping, st.image = m, m
	instantiated := time.Since(instStart)
	release()
	a.log.Info("agent started", zap.Duration("instantiate", instantiated))
	if a.cfg.OnStarted != nil {
		a.cfg.OnStarted(instantiated)
	}
	run, err := inst.Func("run")
	if err != nil {
		return "", err
	}
	if !a.enterRun() {
		return "", *a.life.reason.Load() // Stop interrupted it before run
	}
	v, err := run.Call(wt.String(input))
	if err != nil {
		return "", a.explain(err)
	}
	if r := a.life.reason.Load(); r != nil && a.life.killed.Err() != nil {
		// The hard stop came first: the guest returned only because what
		// it waited in ended (a recv, a store call) before the interrupt
		// trapped it at the next epoch tick. It was cut off all the same.
		return "", *r
	}
	res, ok := v.(wt.Result)
	if !ok {
		return "", fmt.Errorf("run returned %v, not a result", v)
	}
	s, _ := res.Payload.(wt.String)
	if res.Err {
		return "", &RunError{Message: string(s)}
	}
	return string(s), nil
}

// explain attaches the host's reason to a failure it caused (an interrupt);
// a trap of the guest's own stays a trap even while it is being stopped.
func (a *Agent) explain(err error) error {
	if r := a.life.reason.Load(); r != nil && wt.IsInterrupt(err) {
		return fmt.Errorf("%w (%w)", *r, err)
	}
	var exit *wt.ExitError
	if errors.As(err, &exit) {
		return fmt.Errorf("agent called exit(%d) instead of returning from run: %w", exit.Status, err)
	}
	return err
}

// maxHeadline bounds the error text of the host's own "agent failed" line.
const maxHeadline = 512

// headline is the first line of err, at most maxHeadline bytes.
func headline(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > maxHeadline {
		n := maxHeadline
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return s
}
