package host

import (
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/time/rate"
)

// logReportEvery is how often, at most, a guest whose log lines are being
// dropped gets a line saying how many.
const logReportEvery = 10 * time.Second

// logLimiter is an agent's token bucket for guest log lines (log.write and
// the lines of stdout and stderr together). Dropped lines are counted,
// reported in a log line at once, then at most every logReportEvery (by a
// timer, should the guest go quiet) and when the agent ends, and passed to
// onDrop.
type logLimiter struct {
	lim    *rate.Limiter // nil: unlimited
	log    *zap.Logger
	onDrop func()
	every  time.Duration

	mu         sync.Mutex
	dropped    int // since the last report
	total      int
	lastReport time.Time
	pending    *time.Timer // reports the drops once logReportEvery has passed
	ended      bool
}

func newLogLimiter(perSecond float64, burst int, log *zap.Logger, onDrop func()) *logLimiter {
	l := &logLimiter{log: log, onDrop: onDrop, every: logReportEvery}
	if perSecond > 0 {
		l.lim = rate.NewLimiter(rate.Limit(perSecond), max(burst, 1))
	}
	return l
}

// allow reports whether the guest may write one more log line now.
func (l *logLimiter) allow() bool {
	if l == nil || l.lim == nil {
		return true
	}
	ok := l.lim.Allow()
	if !ok && l.onDrop != nil {
		l.onDrop()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !ok {
		l.dropped++
		l.total++
	}
	if l.dropped > 0 {
		switch wait := l.every - time.Since(l.lastReport); {
		case wait <= 0:
			l.reportLocked()
		case l.pending == nil && !l.ended:
			// The guest may go quiet: report then, not at its next line.
			l.pending = time.AfterFunc(wait, l.timedReport)
		}
	}
	return ok
}

func (l *logLimiter) timedReport() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = nil
	if l.dropped > 0 && !l.ended {
		l.reportLocked()
	}
}

// flush reports the lines dropped since the last report; the agent has
// ended: no timed report follows.
func (l *logLimiter) flush() {
	if l == nil || l.lim == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended = true
	if l.pending != nil {
		l.pending.Stop()
		l.pending = nil
	}
	if l.dropped > 0 {
		l.reportLocked()
	}
}

func (l *logLimiter) reportLocked() {
	l.log.Warn(fmt.Sprintf("%d guest log lines dropped (over limits.log_rate = %g/s, log_burst = %d)", l.dropped, float64(l.lim.Limit()), l.lim.Burst()),
		zap.Int("dropped", l.dropped), zap.Int("dropped_total", l.total))
	l.dropped = 0
	l.lastReport = time.Now()
}
