package cluster

import "hash/fnv"

// weight is the rendezvous (highest-random-weight) score of agent on
// member: FNV-1a of both names, finished with a 64-bit mixer so that
// names that differ in one byte score far apart.
func weight(member, agent string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(member))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(agent))
	x := h.Sum64()
	// splitmix64's finaliser.
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Place is the member agent belongs on: the one of members with the
// highest weight (ties go to the lower name), "" when members is empty.
// Adding a member moves only the agents it wins; removing one moves only
// its own. A node places an agent over its settled members.
func Place(agent string, members []string) string {
	best, bestW := "", uint64(0)
	for _, m := range members {
		w := weight(m, agent)
		if best == "" || w > bestW || (w == bestW && m < best) {
			best, bestW = m, w
		}
	}
	return best
}
