package host

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// watFlood calls log.write("flood") 1000 times per byte of its input.
const watFlood = `(component
  (import "toolhost:agent/log@0.1.0" (instance $log
    (type $level (enum "debug" "info" "warn" "error"))
    (export "level" (type $lvl (eq $level)))
    (export "write" (func (param "level" $lvl) (param "message" string)))))
  (core module $mm (memory (export "mem") 1))
  (core instance $mi (instantiate $mm))
  (alias core export $mi "mem" (core memory $mem))
  (alias export $log "write" (func $write))
  (core func $write_low (canon lower (func $write) (memory $mem)))
  (core module $m
    (import "h" "mem" (memory 1))
    (import "h" "write" (func $write (param i32 i32 i32)))
    (data (i32.const 16) "flood")
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) (i32.const 1024))
    (func (export "run") (param $in i32) (param $len i32) (result i32)
      (local $n i32)
      (local.set $n (i32.mul (local.get $len) (i32.const 1000)))
      (block $done
        (loop $l
          (br_if $done (i32.eqz (local.get $n)))
          (call $write (i32.const 1) (i32.const 16) (i32.const 5))
          (local.set $n (i32.sub (local.get $n) (i32.const 1)))
          (br $l)))
      (i32.store8 (i32.const 0) (i32.const 0))
      (i32.store (i32.const 4) (i32.const 16))
      (i32.store (i32.const 8) (i32.const 5))
      (i32.const 0)))
  (core instance $i (instantiate $m (with "h" (instance (export "mem" (memory $mem)) (export "write" (func $write_low))))))
  (func (export "run") (param "input" string) (result (result string (error string)))
    (canon lift (core func $i "run") (memory $mem) (realloc (func $i "realloc"))))
)`

// TestLogRateLimit: a guest flooding log.write gets its burst and then its
// rate; the rest is dropped, counted (callback and "N guest log lines
// dropped" lines adding up to the same), and the agent runs on.
func TestLogRateLimit(t *testing.T) {
	s := env(t)
	p := load(t, s.host, "flood", watFlood)
	const lines = 20000
	var dropped atomic.Int64
	start := time.Now()
	a := s.host.Start(p, AgentConfig{Name: "flooder", Limits: AgentLimits{LogRate: 100, LogBurst: 50, OnLogDropped: func() { dropped.Add(1) }}},
		strings.Repeat("x", lines/1000))
	if out, err := waitAgent(t, a, 60*time.Second); err != nil || out != "flood" {
		t.Fatalf("run = %q, %v", out, err)
	}
	elapsed := time.Since(start)
	mine := s.logs.Filter(func(e observer.LoggedEntry) bool { return e.ContextMap()["agent"] == "flooder" })
	written := mine.FilterMessage("flood").Len()
	reported := 0
	for _, e := range mine.FilterFieldKey("dropped").All() {
		if e.Level != zapcore.WarnLevel || !strings.Contains(e.Message, " guest log lines dropped (over limits.log_rate = 100/s, log_burst = 50)") {
			t.Errorf("report %s %q", e.Level, e.Message)
		}
		reported += int(e.ContextMap()["dropped"].(int64))
	}
	if limit := 50 + int(100*elapsed.Seconds()) + 1; written < 50 || written > limit {
		t.Errorf("%d lines written in %v; want 50 to %d", written, elapsed, limit)
	}
	if n := int(dropped.Load()); n != lines-written || reported != n {
		t.Errorf("written %d, dropped %d (callback) and %d (reports), of %d", written, n, reported, lines)
	}
	// Unlimited (LogRate 0): every line.
	before := s.logs.FilterMessage("flood").Len()
	if _, err := waitAgent(t, s.host.Start(p, AgentConfig{Name: "free"}, "xx"), 60*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := s.logs.FilterMessage("flood").Len() - before; n != 2000 {
		t.Errorf("unlimited: %d lines of 2000", n)
	}
}

// TestLineLoggerRateLimit: stdout and stderr lines share the agent's
// bucket with log.write.
func TestLineLoggerRateLimit(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	var dropped atomic.Int64
	lim := newLogLimiter(1, 10, log, func() { dropped.Add(1) })
	out, errw := newLineLogger(log, "stdout"), newLineLogger(log, "stderr")
	out.limit, errw.limit = lim, lim
	for range 100 {
		out.Write([]byte("a line\n"))
		errw.Write([]byte("another\n"))
	}
	lim.flush()
	written := logs.FilterMessage("a line").Len() + logs.FilterMessage("another").Len()
	if written < 10 || written > 12 || int(dropped.Load()) != 200-written {
		t.Errorf("written %d, dropped %d of 200", written, dropped.Load())
	}
	if n := logs.FilterFieldKey("dropped").Len(); n != 2 {
		t.Errorf("%d reports, want 2 (the first drop, then the flush)", n)
	}
}

// TestLogDropReportTimed: drops after a report are reported once the
// interval has passed even if the guest logs nothing more.
func TestLogDropReportTimed(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	lim := newLogLimiter(0.001, 1, zap.New(core), nil)
	lim.every = 50 * time.Millisecond
	for range 5 {
		lim.allow()
	}
	// The first drop is reported at once, the other three by the timer.
	testenv.Eventually(t, 20*time.Second, "the timed report", func() bool { return logs.FilterFieldKey("dropped").Len() == 2 })
	got := logs.FilterFieldKey("dropped").AllUntimed()
	if got[0].ContextMap()["dropped"] != int64(1) || got[1].ContextMap()["dropped"] != int64(3) || got[1].ContextMap()["dropped_total"] != int64(4) {
		t.Errorf("reports %v, %v", got[0].ContextMap(), got[1].ContextMap())
	}
	lim.allow() // one more drop, then the end: the flush reports it, no timer later
	lim.flush()
	time.Sleep(100 * time.Millisecond)
	if n := logs.FilterFieldKey("dropped").Len(); n != 3 {
		t.Errorf("%d reports, want 3", n)
	}
}
