package daemon

import (
	"context"
	"fmt"
	"time"

	sd "github.com/coreos/go-systemd/v22/daemon"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// notifier talks sd_notify to systemd (Type=notify). Without
// $NOTIFY_SOCKET nothing is sent.
type notifier struct {
	log *zap.Logger
}

func newNotifier(log *zap.Logger) *notifier { return &notifier{log: log} }

// send sends state ("READY=1", "STOPPING=1", ...).
func (n *notifier) send(state string) {
	sent, err := sd.SdNotify(false, state)
	switch {
	case err != nil:
		n.log.Warn("sd_notify failed", zap.String("state", state), zap.Error(err))
	case sent:
		n.log.Debug("sd_notify", zap.String("state", state))
	}
}

// reloading sends RELOADING=1 with the monotonic timestamp systemd's
// Type=notify-reload asks for.
func (n *notifier) reloading() {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		n.send(sd.SdNotifyReloading)
		return
	}
	usec := ts.Sec*1_000_000 + ts.Nsec/1_000
	n.send(fmt.Sprintf("%s\nMONOTONIC_USEC=%d", sd.SdNotifyReloading, usec))
}

// watchdog pings systemd at half the interval $WATCHDOG_USEC asks for,
// until ctx ends; without it, it returns at once.
func (n *notifier) watchdog(ctx context.Context) {
	every, err := sd.SdWatchdogEnabled(false)
	if err != nil {
		n.log.Warn("watchdog settings ignored", zap.Error(err))
		return
	}
	if every <= 0 {
		return
	}
	t := time.NewTicker(every / 2)
	defer t.Stop()
	for {
		n.send(sd.SdNotifyWatchdog)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
