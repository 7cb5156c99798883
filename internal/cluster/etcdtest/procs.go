package etcdtest

// Members in subprocesses, for crashes: an embedded member cannot crash
// for real (its listeners, and its lessor behind them, outlive HardStop).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/cluster"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// memberEnv carries a subprocess member's procConfig, as JSON.
const memberEnv = "TOOLHOSTD_ETCDTEST_MEMBER"

// procConfig is what a subprocess member needs to start.
type procConfig struct {
	Name, Dir, Peer, Client, Initial string
	Existing                         bool // rejoin on its data
}

// MemberMain runs an etcd member, and never returns, in a process that
// StartProcs started; elsewhere it returns at once. A test package that
// uses StartProcs calls it first thing in TestMain. The member has etcd's
// default timing (heartbeat 100 ms, election timeout 1 s) and lives until
// it is killed or its parent goes (its stdin closes).
func MemberMain() {
	v := os.Getenv(memberEnv)
	if v == "" {
		return
	}
	var pc procConfig
	if err := json.Unmarshal([]byte(v), &pc); err != nil {
		fmt.Fprintf(os.Stderr, "etcdtest member: %s: %v\n", memberEnv, err)
		os.Exit(2)
	}
	cfg := memberConfig(pc.Name, pc.Dir, mustURL(pc.Peer), mustURL(pc.Client))
	cfg.InitialCluster = pc.Initial
	if pc.Existing {
		cfg.ClusterState = embed.ClusterStateFlagExisting
	}
	if _, err := embed.StartEtcd(cfg); err != nil {
		fmt.Fprintf(os.Stderr, "etcdtest member %s: %v\n", pc.Name, err)
		os.Exit(2)
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// Procs is etcd members in subprocesses of the test binary (MemberMain):
// Kill crashes one for real (SIGKILL), with no leadership transfer.
type Procs struct {
	t    testing.TB
	cfgs []procConfig
	logs []string           // each member's log file (its latest start)
	clis []*clientv3.Client // one per member, for Status
	ids  []uint64           // the members' IDs

	mu   sync.Mutex
	cmds []*exec.Cmd // nil: not running
}

// StartProcs runs n members (3, typically) with fresh data directories
// and waits until they have a leader; they are killed when the test ends.
// A member that cannot bind its port (taken by another process between
// freeURL and the member's start) fails the start, which is tried again
// on other ports, at most three times; any other failure is fatal, with
// the end of the member's log.
func StartProcs(t testing.TB, n int) *Procs {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p, err := startProcs(t, n)
		if err == nil {
			t.Cleanup(p.Close)
			return p
		}
		p.Close()
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
		t.Logf("%v\nstarting the members again on other ports", err)
	}
}

func startProcs(t testing.TB, n int) (*Procs, error) {
	p := &Procs{t: t, cmds: make([]*exec.Cmd, n), logs: make([]string, n)}
	var initial []string
	for i := range n {
		peer, client := freeURL(t), freeURL(t)
		pc := procConfig{Name: fmt.Sprintf("m%d", i), Dir: t.TempDir(), Peer: peer.String(), Client: client.String()}
		initial = append(initial, pc.Name+"="+pc.Peer)
		p.cfgs = append(p.cfgs, pc)
	}
	for i := range p.cfgs {
		p.cfgs[i].Initial = strings.Join(initial, ",")
	}
	for i := range n {
		if err := p.start(i); err != nil {
			return p, err
		}
		cli, err := clientv3.New(clientv3.Config{
			Endpoints: []string{p.cfgs[i].Client}, DialTimeout: time.Second, Logger: zap.NewNop(),
			DialOptions: cluster.DialOptions(),
		})
		if err != nil {
			return p, err
		}
		p.clis = append(p.clis, cli)
	}
	p.ids = make([]uint64, n)
	for i := range n {
		if err := testenv.Poll(20*time.Second, func() bool {
			st, err := p.status(i)
			p.ids[i] = st.id
			return err == nil
		}); err != nil {
			return p, fmt.Errorf("etcd member %d up: %w; its log ends:\n%s", i, err, p.logTail(i))
		}
	}
	return p, p.WaitLeader(20 * time.Second)
}

// logTail is the end of member i's log.
func (p *Procs) logTail(i int) string {
	b, err := os.ReadFile(p.logs[i])
	if err != nil {
		return err.Error()
	}
	return string(b[max(0, len(b)-2048):])
}

func (p *Procs) start(i int) error {
	env, err := json.Marshal(p.cfgs[i])
	if err != nil {
		return err
	}
	p.logs[i] = filepath.Join(p.t.TempDir(), p.cfgs[i].Name+".log")
	logf, err := os.Create(p.logs[i])
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), memberEnv+"="+string(env))
	cmd.Stdout, cmd.Stderr = logf, logf
	if _, err := cmd.StdinPipe(); err != nil { // closed by Kill's Wait
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start etcd member %d: %w", i, err)
	}
	p.mu.Lock()
	p.cmds[i] = cmd
	p.mu.Unlock()
	return nil
}

// Endpoints are the members' client URLs.
func (p *Procs) Endpoints() []string {
	var out []string
	for _, pc := range p.cfgs {
		out = append(out, pc.Client)
	}
	return out
}

// Kill crashes member i: SIGKILL, then waits for the process to end.
func (p *Procs) Kill(i int) {
	p.mu.Lock()
	cmd := p.cmds[i]
	p.cmds[i] = nil
	p.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

// Restart starts a killed member i again on its data; WaitLeader waits for
// it to be back.
func (p *Procs) Restart(i int) error {
	p.cfgs[i].Existing = true
	return p.start(i)
}

// Leader is the index of the member that every running member names as
// leader, or -1 while they do not agree (an election, a member not up).
func (p *Procs) Leader() int {
	leader := -1
	for i := range p.cfgs {
		if !p.Running(i) {
			continue
		}
		st, err := p.status(i)
		l := slices.Index(p.ids, st.leader)
		if err != nil || l < 0 || (leader >= 0 && l != leader) {
			return -1
		}
		leader = l
	}
	return leader
}

// Running reports whether member i runs (was not killed).
func (p *Procs) Running(i int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmds[i] != nil
}

// WaitLeader waits up to d for the running members to agree on a leader
// among them and to have applied what it had committed (a restarted
// member caught up).
func (p *Procs) WaitLeader(d time.Duration) error {
	if err := testenv.Poll(d, func() bool {
		l := p.Leader()
		if l < 0 || !p.Running(l) {
			return false
		}
		lst, err := p.status(l)
		if err != nil {
			return false
		}
		for i := range p.cfgs {
			if st, err := p.status(i); p.Running(i) && (err != nil || st.applied < lst.committed) {
				return false
			}
		}
		return true
	}); err != nil {
		return fmt.Errorf("etcd members agree on a running leader and caught up: %w", err)
	}
	return nil
}

// memberStatus is a member's view: its own ID, the leader it follows (0:
// none), the raft index it committed and the one it applied.
type memberStatus struct{ id, leader, committed, applied uint64 }

// status asks member i for its status, within half a second.
func (p *Procs) status(i int) (memberStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	st, err := p.clis[i].Status(ctx, p.cfgs[i].Client)
	if err != nil {
		return memberStatus{}, err
	}
	return memberStatus{id: st.Header.MemberId, leader: st.Leader, committed: st.RaftIndex, applied: st.RaftAppliedIndex}, nil
}

// Close kills every member.
func (p *Procs) Close() {
	for i := range p.cfgs {
		p.Kill(i)
	}
	for _, cli := range p.clis {
		_ = cli.Close()
	}
}

// mustURL parses a URL that StartProcs made.
func mustURL(s string) url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return *u
}
