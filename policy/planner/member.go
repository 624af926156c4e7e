package planner

import (
	"cmp"
	"slices"
	"strings"
)

// member is one cluster (or Balancer target) while a plan is made.
type member struct {
	name  string
	hash  uint64
	index int // position in the input, for error messages
	// weight is the cluster's weight, or a Balancer target's proportion.
	weight  int64
	minPref int64 // minReplicas
	maxPref int64 // maxReplicas, or -1 for none
	// limit is what the member may hold when bounded: the lower of its
	// maxReplicas and its capacity. A cluster without preferences is
	// bounded with limit 0.
	limit         int64
	bounded       bool
	capacityBound bool  // capacity, not maxReplicas, sets the limit
	min           int64 // the minimum it gets in this plan
	lo            int64 // what it keeps before sharing: min, or more without rebalance
	out           int64 // the plan
}

// newMembers returns a member for every name, set up by setup, in the order
// of order.
func newMembers(key string, names []string, setup func(*member)) []member {
	ms := make([]member, len(names))
	seed := fnv(fnvOffset, key)
	seed *= fnvPrime // a zero byte between key and name
	for i, name := range names {
		ms[i] = member{name: name, index: i, hash: fnv(seed, name), maxPref: -1}
		setup(&ms[i])
	}
	order(ms)
	return ms
}

// The tie-breaking hash of a cluster is FNV-1a (64 bit) of the object key, a
// zero byte and the cluster name. Sorting equal weights by it gives every
// object its own, stable order of clusters.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// fnv continues an FNV-1a hash h over s.
func fnv(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

// order sorts members by weight, heaviest first, then by hash, then by name
// (should two hashes collide), then by input position: the order in which
// they are served whenever the rules leave a choice.
func order(ms []member) {
	// Sort compact keys, then move each member once along the permutation's
	// cycles: members are large.
	type sortKey struct {
		weight int64
		hash   uint64
		i      int32
	}
	keys := make([]sortKey, len(ms))
	for i := range ms {
		keys[i] = sortKey{ms[i].weight, ms[i].hash, int32(i)}
	}
	slices.SortFunc(keys, func(a, b sortKey) int {
		if a.weight != b.weight {
			return cmp.Compare(b.weight, a.weight)
		}
		if a.hash != b.hash {
			return cmp.Compare(a.hash, b.hash)
		}
		x, y := &ms[a.i], &ms[b.i]
		if c := strings.Compare(x.name, y.name); c != 0 {
			return c
		}
		return cmp.Compare(x.index, y.index)
	})
	for start := range keys {
		if int(keys[start].i) == start {
			continue
		}
		tmp := ms[start]
		j := start
		for {
			k := int(keys[j].i)
			keys[j].i = int32(j)
			if k == start {
				ms[j] = tmp
				break
			}
			ms[j] = ms[k]
			j = k
		}
	}
}

// duplicate returns the input position of the first name listed a second
// time in ordered ms, or -1.
func duplicate(ms []member) int {
	first := -1
	for i := 1; i < len(ms); i++ {
		if ms[i].name == ms[i-1].name && (first < 0 || ms[i].index < first) {
			first = ms[i].index
		}
	}
	return first
}

// hold caps n at what m may hold.
func (m *member) hold(n int64) int64 {
	if m.bounded && n > m.limit {
		return m.limit
	}
	return n
}

// shareOut sets every member's out to what it keeps plus its share of seats
// by weight, and returns how many of the seats it placed.
func shareOut(ms []member, seats int64) int64 {
	for i := range ms {
		ms[i].out = ms[i].lo
	}
	shares, classes := group(ms)
	placed := fill(shares, uint64(seats))
	for c, class := range classes {
		spread(ms, class, shares[c].got-shares[c].floor)
	}
	return int64(placed)
}

// group gathers the weighted members into classes of identical weight,
// floor and cap, one share each, so that the engine's work grows with the
// number of distinct claims rather than of clusters. Members of a class are
// in order, and the class ranks as its first member.
func group(ms []member) ([]share, [][]int) {
	type key struct {
		weight, floor, cap int64
		capped             bool
	}
	// A handful of classes is the common case: scan them, and index them
	// only when there are many.
	var keys []key
	var index map[key]int
	classOf := func(k key) (int, bool) {
		if index != nil {
			c, ok := index[k]
			return c, ok
		}
		c := slices.Index(keys, k)
		return c, c >= 0
	}
	var shares []share
	var classes [][]int
	for i := range ms {
		m := &ms[i]
		if m.weight == 0 {
			continue
		}
		k := key{weight: m.weight, floor: m.lo - m.min, capped: m.bounded}
		if m.bounded {
			k.cap = m.limit - m.min
		}
		c, ok := classOf(k)
		if !ok {
			c = len(keys)
			keys = append(keys, k)
			switch {
			case index != nil:
				index[k] = c
			case len(keys) > 16:
				index = make(map[key]int, 2*len(keys))
				for j, k := range keys {
					index[k] = j
				}
			}
			shares = append(shares, share{capped: k.capped, rank: i})
			classes = append(classes, nil)
		}
		shares[c].weight += uint64(k.weight)
		shares[c].floor += uint64(k.floor)
		shares[c].cap += uint64(k.cap)
		classes[c] = append(classes[c], i)
	}
	return shares, classes
}

// spread hands a class's extra seats to its members round-robin in order.
// Each member then stays within one seat of its share whenever the class is,
// and one more seat for the class never takes one from a member.
func spread(ms []member, class []int, extra uint64) {
	n := uint64(len(class))
	for j, i := range class {
		add := extra / n
		if uint64(j) < extra%n {
			add++
		}
		ms[i].out = ms[i].lo + int64(add)
	}
}
