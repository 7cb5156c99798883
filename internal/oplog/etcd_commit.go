package oplog

import (
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// The committer over etcd. A batch is written in order in transactions
// of at most etcdMaxOps operations (and comparisons) and etcdMaxTxnBytes:
// appends share them; a create, which must find no header, and a delete
// each have one of their own. A transaction of appends requires each of
// its logs to be in etcd (its header) and to pass its guard; one that
// fails tells, by its Else, which logs are missing; the other logs of it
// are written again, each in a transaction of its own, so that a fenced
// log fails alone. A request etcd does not answer (unreachable, or a
// timeout) fails, and so does the rest of the batch, as etcd would not
// take it either: each such request would wait out its own timeout.

// etcdCommit is the writing of one batch.
type etcdCommit struct {
	b       *etcdBackend
	batch   []*request
	errs    []error
	commits int
	guards  map[string][]clientv3.Cmp // of the logs met, with their header's
	failed  map[string]error          // logs an append of which failed in this batch
	abort   error                     // a request of the batch failed in etcd: the rest fail
}

func (b *etcdBackend) commit(batch []*request, errs []error) int {
	c := &etcdCommit{b: b, batch: batch, errs: errs, guards: map[string][]clientv3.Cmp{}, failed: map[string]error{}}
	var group []int // appends, indexes in batch
	ops, cmps, size := 0, 0, 0
	logs := map[string]bool{}
	flush := func() {
		if len(group) > 0 {
			c.appends(group)
		}
		group, ops, cmps, size = nil, 0, 0, 0
		clear(logs)
	}
	for i, r := range batch {
		if errs[i] != nil {
			continue
		}
		if r.op != opAppend {
			flush()
			c.single(i)
			continue
		}
		g, err := c.guard(r.key)
		if err != nil {
			c.fail(i, err)
			continue
		}
		n := len(b.entryKey(r.key, r.seq)) + len(r.value)
		more := 0 // comparisons r adds
		if !logs[r.key] {
			more = len(g)
		}
		if len(group) > 0 && (ops+1 > etcdMaxOps || cmps+more > etcdMaxOps || size+n > etcdMaxTxnBytes) {
			flush()
			more = len(g)
		}
		group = append(group, i)
		logs[r.key] = true
		ops, cmps, size = ops+1, cmps+more, size+n
	}
	flush()
	return c.commits
}

// guard are the comparisons of a transaction writing log key: that its
// header exists, and its guard's.
func (c *etcdCommit) guard(key string) ([]clientv3.Cmp, error) {
	if g, ok := c.guards[key]; ok {
		return g, nil
	}
	own, err := c.b.ownGuard(key)
	if err != nil {
		return nil, err
	}
	g := append([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(c.b.headerKey(key)), ">", 0)}, own...)
	c.guards[key] = g
	return g, nil
}

// ownGuard is Guard's comparisons for log key (none without a Guard),
// within etcd's limit less the one a transaction adds of the header.
func (b *etcdBackend) ownGuard(key string) ([]clientv3.Cmp, error) {
	if b.guard == nil {
		return nil, nil
	}
	g := b.guard(key)
	if len(g) > etcdMaxOps-1 {
		return nil, fmt.Errorf("a guard of %d comparisons: etcd's limit is %d", len(g), etcdMaxOps-1)
	}
	return g, nil
}

// fail fails request i with err; a failed append fails the later ones of
// its log in the batch.
func (c *etcdCommit) fail(i int, err error) {
	c.errs[i] = err
	if r := c.batch[i]; r.op == opAppend {
		if _, ok := c.failed[r.key]; !ok {
			c.failed[r.key] = err
		}
	}
}

// failAll fails requests idx with err.
func (c *etcdCommit) failAll(idx []int, err error) {
	for _, i := range idx {
		c.fail(i, err)
	}
}

// txn commits one transaction; an error of etcd aborts the batch.
func (c *etcdCommit) txn(idx []int, cmps []clientv3.Cmp, then, els []clientv3.Op) (*clientv3.TxnResponse, bool) {
	if c.abort != nil {
		c.failAll(idx, fmt.Errorf("not written: an earlier transaction of the batch failed: %w", c.abort))
		return nil, false
	}
	ctx, cancel := c.b.ctx()
	resp, err := c.b.cli.Txn(ctx).If(cmps...).Then(then...).Else(els...).Commit()
	cancel()
	if err != nil {
		c.b.log.Error("commit failed", zap.String("file", c.b.name), zap.Int("batch", len(c.batch)), zap.Int("requests", len(idx)), zap.Error(err))
		c.abort = err
		c.failAll(idx, fmt.Errorf("commit: %w", c.b.wrap(err)))
		return nil, false
	}
	if resp.Succeeded {
		c.commits++
	}
	return resp, true
}

// appends writes the appends idx in one transaction, or, if it fails, as
// many as will be written.
func (c *etcdCommit) appends(idx []int) {
	live := idx[:0:0]
	for _, i := range idx {
		r := c.batch[i]
		if err, ok := c.failed[r.key]; ok {
			c.fail(i, fmt.Errorf("entry %d not written: an earlier one failed (close the log and open it again): %w", r.seq, err))
			continue
		}
		live = append(live, i)
	}
	if len(live) == 0 {
		return
	}
	var logs []string // in the order met
	byLog := map[string][]int{}
	var cmps []clientv3.Cmp
	var then, els []clientv3.Op
	for _, i := range live {
		r := c.batch[i]
		if byLog[r.key] == nil {
			logs = append(logs, r.key)
			cmps = append(cmps, c.guards[r.key]...)
			els = append(els, clientv3.OpGet(c.b.headerKey(r.key), clientv3.WithKeysOnly()))
		}
		byLog[r.key] = append(byLog[r.key], i)
		then = append(then, clientv3.OpPut(c.b.entryKey(r.key, r.seq), string(r.value)))
	}
	resp, ok := c.txn(live, cmps, then, els)
	if !ok || resp.Succeeded {
		return
	}
	var rest []int // of the logs etcd holds
	for j, key := range logs {
		if len(resp.Responses[j].GetResponseRange().GetKvs()) == 0 {
			c.failAll(byLog[key], errLogMissing)
			continue
		}
		rest = append(rest, byLog[key]...)
	}
	switch {
	case len(rest) == 0:
	case len(rest) < len(live): // a missing log failed the transaction
		c.appends(rest)
	case len(logs) == 1: // its guard failed
		c.failAll(rest, errGuardFailed)
	default: // one guard or more failed: each log on its own
		for _, key := range logs {
			c.appends(byLog[key])
		}
	}
}

// single writes the create or delete batch[i] in a transaction of its
// own: a create must find no header; a delete removes every key of the
// log.
func (c *etcdCommit) single(i int) {
	r := c.batch[i]
	guard, err := c.b.ownGuard(r.key)
	if err != nil {
		c.fail(i, err)
		return
	}
	switch r.op {
	case opCreate:
		h := c.b.headerKey(r.key)
		cmps := append([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(h), "=", 0)}, guard...)
		resp, ok := c.txn([]int{i}, cmps, []clientv3.Op{clientv3.OpPut(h, string(r.value))}, []clientv3.Op{clientv3.OpGet(h, clientv3.WithKeysOnly())})
		switch {
		case !ok || resp.Succeeded:
		case len(resp.Responses[0].GetResponseRange().GetKvs()) > 0:
			c.fail(i, errors.New("the log is already in etcd"))
		default:
			c.fail(i, errGuardFailed)
		}
	case opDelete:
		resp, ok := c.txn([]int{i}, guard, []clientv3.Op{clientv3.OpDelete(c.b.logPrefix(r.key), clientv3.WithPrefix())}, nil)
		if ok && !resp.Succeeded {
			c.fail(i, errGuardFailed)
		}
	default:
		c.fail(i, fmt.Errorf("unknown op %d", r.op))
	}
}
