package daemon

import (
	"context"
	"reflect"
	"time"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
)

// reopenTimeout bounds ReopenAudit's wait on the audit writer.
const reopenTimeout = 5 * time.Second

// ReopenAudit reopens the audit log file (after logrotate moved it; serve
// does it on SIGHUP). A no-op without one or for stderr.
func (d *Daemon) ReopenAudit() error {
	ctx, cancel := context.WithTimeout(context.Background(), reopenTimeout)
	defer cancel()
	if err := d.g.Audit.Reopen(ctx); err != nil {
		d.log.Error("reopening the audit log failed; writing on to the old file", zap.Error(err))
		return err
	}
	return nil
}

// policyOnly reports whether old and cur differ only in their grants
// tables: the new policy then applies to the running agent (its next
// operations) without a restart.
func policyOnly(old, cur *config.Agent) bool {
	if reflect.DeepEqual(old.Grants, cur.Grants) {
		return false
	}
	o, c := *old, *cur
	o.Grants, c.Grants = nil, nil
	return reflect.DeepEqual(o, c)
}
