package planner

import (
	"fmt"
	"slices"
)

// Input is what Plan needs to place one object's replicas.
type Input struct {
	// Key names the object, "namespace/name". Hashed with each cluster's
	// name it breaks ties between equal weights, so one object always plans
	// the same way while different objects spread over different clusters.
	Key string
	// Total is the number of replicas to place.
	Total int64
	// Clusters are the clusters that can take replicas now. Clusters that are
	// offline are left out; entries for them elsewhere are ignored.
	Clusters    []string
	Preferences Preferences
	// Capacity is how many replicas a cluster can run, when it is known to
	// be limited. A cluster without an entry is unbounded.
	Capacity map[string]int64
	// Current is how many replicas each cluster runs now. Only plans without
	// Rebalance read it.
	Current map[string]int64
}

// Result is a plan: replicas per cluster, and overflow per cluster.
type Result struct {
	// Replicas has an entry for every cluster of the input.
	Replicas map[string]int64
	// Overflow holds the replicas that no cluster could run, attributed to
	// the clusters that would run them if they had the capacity (or, for a
	// Balancer, to the blocked targets they fell back from). Clusters without
	// overflow have no entry.
	Overflow map[string]int64
}

// Validate reports the first problem with in.
func (in Input) Validate() error {
	if err := in.validate(); err != nil {
		return err
	}
	return checkClusters(in.Clusters)
}

// validate checks everything but duplicate cluster names, which Plan finds
// more cheaply once the clusters are sorted.
func (in Input) validate() error {
	if err := checkCount("total", in.Total); err != nil {
		return err
	}
	if err := checkClusterNames(in.Clusters); err != nil {
		return err
	}
	if err := in.Preferences.Validate(); err != nil {
		return err
	}
	if err := checkCounts("capacity", in.Capacity); err != nil {
		return err
	}
	return checkCounts("current", in.Current)
}

// Plan places in.Total replicas on in.Clusters following the Federated
// ReplicaSet preferences (see the package documentation).
func Plan(in Input) (Result, error) {
	if err := in.validate(); err != nil {
		return Result{}, err
	}
	star, hasStar := in.Preferences.Clusters[AnyCluster]
	ms := newMembers(in.Key, in.Clusters, func(m *member) {
		pref, ok := in.Preferences.Clusters[m.name]
		if !ok {
			pref, ok = star, hasStar
		}
		if !ok {
			m.bounded = true // no preferences: no replicas
			return
		}
		m.weight, m.minPref = pref.Weight, pref.MinReplicas
		if pref.MaxReplicas != nil {
			m.maxPref = *pref.MaxReplicas
			m.limit, m.bounded = m.maxPref, true
		}
		if c, ok := in.Capacity[m.name]; ok && (!m.bounded || c < m.limit) {
			m.limit, m.bounded, m.capacityBound = c, true, true
		}
	})
	if i := duplicate(ms); i >= 0 {
		return Result{}, fmt.Errorf("clusters[%d]: %q is listed twice", i, in.Clusters[i])
	}
	current := in.Current
	if in.Preferences.Rebalance {
		current = nil
	}
	place(ms, in.Total, current)
	res := Result{
		Replicas: make(map[string]int64, len(ms)),
		Overflow: overflow(ms, in.Total),
	}
	for i := range ms {
		res.Replicas[ms[i].name] = ms[i].out
	}
	return res, nil
}

// place sets out on every member of ordered ms. With current nil it plans a
// rebalance; otherwise running replicas stay where they are.
func place(ms []member, total int64, current map[string]int64) {
	// Minimums first, in order, as far as the total and limits allow.
	left := total
	var kept int64
	for i := range ms {
		m := &ms[i]
		m.min = min(m.hold(m.minPref), left)
		left -= m.min
		m.lo = m.min
		if current != nil {
			m.lo = max(m.min, m.hold(current[m.name]))
		}
		kept += m.lo
	}
	if kept > total {
		scaleDown(ms, total, kept)
		return
	}
	// Then the rest by weight, each member starting from what it keeps.
	shareOut(ms, total-kept)
}

// scaleDown plans fewer replicas than the members keep without rebalance.
// It removes replicas only from members above their weighted share, the
// furthest above first, and never takes one below that share.
func scaleDown(ms []member, total, kept int64) {
	share := slices.Clone(ms)
	place(share, total, nil)
	excess := make([]int64, len(ms))
	var most int64
	for i := range ms {
		excess[i] = max(0, ms[i].lo-share[i].out)
		most = max(most, excess[i])
	}
	drop := kept - total
	removed := func(level int64) int64 {
		var n int64
		for _, e := range excess {
			n += max(0, e-level)
		}
		return n
	}
	// The lowest level to which cutting every member down removes no more
	// than drop replicas.
	lo, hi := int64(0), most
	for lo < hi {
		mid := lo + (hi-lo)/2
		if removed(mid) <= drop {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	level := lo
	drop -= removed(level)
	for i := range ms {
		ms[i].out = ms[i].lo - max(0, excess[i]-level)
	}
	// Members exactly at the level give one more each, last in order first.
	for i := len(ms) - 1; i >= 0 && drop > 0 && level > 0; i-- {
		if excess[i] >= level {
			ms[i].out--
			drop--
		}
	}
}

// overflow returns the replicas of total that no member of ms could take,
// attributed to the members whose capacity, not maxReplicas, stopped them:
// the plan for those replicas over those members as if they had no capacity
// limit. Replicas kept out by maxReplicas or by weight 0 are not overflow.
func overflow(ms []member, total int64) map[string]int64 {
	out := make(map[string]int64)
	unplaced := total
	for i := range ms {
		unplaced -= ms[i].out
	}
	if unplaced <= 0 {
		return out
	}
	var rest []member
	for _, m := range ms {
		if !m.capacityBound {
			continue
		}
		r := m
		r.minPref = max(0, m.minPref-m.limit)
		r.bounded = m.maxPref >= 0
		r.limit = m.maxPref - m.limit
		rest = append(rest, r)
	}
	// rest keeps the order of ms: same weights, same hashes.
	place(rest, unplaced, nil)
	for _, r := range rest {
		if r.out > 0 {
			out[r.name] = r.out
		}
	}
	return out
}
