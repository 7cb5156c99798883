// Package cluster spreads the agents of one config over several hosts with
// etcd: membership (a lease and a member key per host), rendezvous
// placement of agent names over the settled members, ownership keys
// claimed in transactions and attached to the owner's lease, paced hand
// overs, and self-fencing: a host that cannot renew its lease stops its
// agents before the lease can have expired at etcd. It knows agents only
// by name, through a Runner.
//
// # The guarantee
//
// At most one host runs an agent at any time, under these assumptions:
//
//  1. Clocks advance at the same rate on the hosts and on the etcd
//     leader, within the margin below (a quarter of the TTL, far more than
//     any real drift); their absolute values do not matter.
//  2. The Runner's Stop returns only once the agent no longer runs, and
//     within StopBudget(lease_ttl) = lease_ttl/4 of being called (the
//     daemon caps every agent's stop grace at that in a cluster, and an
//     interrupted guest stops at its next epoch tick).
//  3. The host's process is not paused (SIGSTOP, a VM freeze) for longer
//     than lease_ttl/4 while it holds agents.
//  4. Nobody deletes ownership keys or revokes leases behind the hosts'
//     backs (a host whose own key disappears stops that agent at once,
//     but cannot undo what ran meanwhile).
//
// The daemon's Stop waits for its operation lock, which a reload may hold
// while it stops agents itself; so the daemon is also a Halter: a fence
// first halts every running instance directly (each stops within the
// capped grace), then cleans up through Stop.
//
// Why it holds: an agent runs only on the host that holds its key
// PREFIX/agents/NAME, which is created only if absent and attached to the
// owner's lease; the key goes away only when the owner deletes it, after
// its Stop returned, or when the owner's lease expires at etcd. The owner
// remembers the local time at which it sent the last grant or renewal
// that etcd answered, t_ok: etcd granted or renewed the lease at or after
// t_ok, so it cannot expire before t_ok + lease_ttl. (Not the time of the
// answer: etcd counts the TTL from when it handled the request, which may
// be any time between the sending and the answer.) t_ok starts as the
// grant's sending, and the renewals (every lease_ttl/10) count from it
// too, starting while the member key is still being written: a slow join
// does not eat the deadline's room before the first renewal. Renewals do
// not wait for each other (one stuck at an etcd member waiting for a
// leader does not hold back the next, which goes to another member); any
// answered one moves t_ok to its own sending time, never back.
// From t_ok + lease_ttl/2 on, with no newer answered renewal, the host
// fences: it stops every agent at once (assumption 2: done by
// t_ok + 3/4 lease_ttl), then drops the lease. That leaves lease_ttl/4 of
// margin before another host can claim any of them. A fence that has not
// finished by t_ok + 9/10 lease_ttl calls Options.Overrun (serve exits the
// process: an ended process runs nothing).
//
// On a partition, the cut-off host fences within lease_ttl/2 of its last
// answered renewal, whatever the reason (etcd down, quorum lost, network);
// the other hosts take its agents only after its lease expired, so each
// agent is down for about lease_ttl plus the time to start it. When every
// etcd member is gone, every host fences; the agents come back when etcd
// does. A side effect an agent caused before it stopped (a tool call an
// MCP server is still executing) is not undone.
//
// # Losing an etcd member
//
// Losing a follower of a three-member etcd changes nothing: the lease is
// renewed through the others. Losing the leader gracefully (a clean stop
// hands leadership over first) changes nothing either. A leader that
// crashes (kill -9, power loss) leaves etcd without a leader
// until the others elect one: no renewal is answered meanwhile. The hosts
// ride through it, without fencing, if the election ends before their
// deadline t_ok + lease_ttl/2, where t_ok is at most lease_ttl/10 old at
// the crash: an election shorter than 0.4 x lease_ttl is ridden through
// wherever the crash falls, one up to 0.5 x lease_ttl at best. Measured
// with etcd's default timing (heartbeat 100 ms, election timeout 1 s),
// three hosts, ten SIGKILLs of the leader per TTL: a new leader after
// 0.94-1.83 s; the hosts rode through 6 of 10 crashes at lease_ttl 3s and
// 10 of 10 at 4, 5, 6, 8 and 10s. Elections of up to 2.4 s were seen on
// Debian's etcd 3.4 (issue 33), and of up to 4.6 s here when the leader
// crashed soon after another member restarted (a busy machine, the
// restarted member maybe still catching up), so RideThroughTTL is 6s
// (elections up to 2.4 s, wherever the crash falls) and New warns below
// it; the default, 10s, rides through elections up to 4 s. A host that
// does not ride through fences (every agent stops, safety holds) and
// rejoins once etcd has a leader; its agents run again a few seconds
// later. The measurement (minutes):
// measurement (minutes):
//
//	TOOLHOSTD_LEADER_CRASH=3,4,5,6,8,10 go test -run TestLeaderCrashMeasure -v -timeout 30m ./internal/cluster/
//
// # Per-session instances and messages
//
// An agent with per-session instances is not placed whole: every host
// runs its service, and each session's instance runs only on the host
// that holds the session's key PREFIX/sessions/AGENT/SESSION, created only
// if absent (ClaimSession, before the instance starts) and attached to
// the holder's lease like an agent's key. The argument above carries over
// key for key: the key goes only when its holder deleted it after the
// instance ended (ReleaseSession; claims and releases of a host are
// serialised, so a release never takes the key from under an instance a
// claim just counted) or when the lease expired; a fence halts these
// instances with the others (the Runner records each one where its Halt
// finds it, and a claim that races a fence is refused under startMu as an
// agent's is), so by t_ok + 3/4 lease_ttl none runs, a quarter of the TTL
// before another host can create the key. A session with no holder
// belongs on the settled member with the highest rendezvous weight for
// (agent, session) (PlaceSession): only that member claims it, when a
// message for it arrives, so sessions spread over the hosts; a session
// that has a holder stays there until its instance ends (no hand over).
// A host that deletes a key it did not create is outside assumption 4.
// An agent marked lazy (Placement.Lazy: it starts on its first message) is
// claimed by its placed host only after a message asked for it (Want);
// the claim itself is the same as any agent's.
//
// The message path reads the view: Owner and SessionOwner (who holds a
// key; an agent still starting or being handed over has no owner, so
// its messages wait), PlaceSession, a member's published control API
// Address, Changed (closed at each change of the view) and Gone (closed
// when a member's key goes). These lookups only route messages; they
// never start anything, so they cannot weaken the guarantee: a message
// that reaches a host that does not hold the key is refused or sent on,
// and an instance starts only after its key was created.
//
// # Placement and pacing
//
// A member counts for placement once it has been seen continuously for
// Options.Settle: a member that flaps (leaves and comes back within the
// settle time) never gets agents, so nothing bounces. Each agent belongs on
// the settled member with the highest rendezvous weight; a joining member
// wins about 1/N of the agents and only those move. An owner hands over
// agents that now belong elsewhere at most Options.MovesPerSecond a second
// (stop, then delete the key); the new owner claims a free key at once
// (an agent whose owner died is not paced).
package cluster
