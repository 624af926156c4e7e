// Package proximity orders a federated Service's clusters for one client,
// nearest first: for a client inside cluster C, C itself, then the clusters
// that share one of C's zones, then C's region, then the rest; for a client
// at a known place, by great-circle distance. Within a tier, clusters the
// client's cluster reaches materially faster come first (rtt.go). Within a
// tier and RTT (or among clusters at about the same distance) clusters are
// drawn in proportion to their weights, clusters of weight 0 follow every other healthy cluster, and
// unhealthy ones come last. It knows nothing of DNS: the CoreDNS plugin orders
// its answers with it, and so may anything else that hands out endpoints.
//
// Everything here runs per query in the plugin, so nothing allocates for a
// Service of up to 16 clusters.
package proximity

import (
	"math"
	"slices"
	"time"

	"github.com/kfed-io/kfed/internal/geo"
	"github.com/kfed-io/kfed/internal/stablehash"
)

// SameDistance is how close two clusters' distances from a client must be
// for them to count as equally near: their weights then share the client's
// queries, as within a zone. Distance is a proxy for latency, and 50 km is
// well under a millisecond of fibre, so the clusters of one metro area (or
// one cloud region, which the region table puts at one point) stay a pool.
const SameDistance = 50.0

// Tier numbers say how near a cluster is to a client's own cluster, by
// labels: the lower, the nearer.
const (
	TierSelf   = 0 // the client's own cluster
	TierZone   = 1 // shares one of its zones
	TierRegion = 2 // in its region
	TierOther  = 3 // anywhere else, or nowhere known
)

// Place is where a cluster is, as its Cluster says: region, zones and, when
// known, coordinates.
type Place struct {
	Region  string
	Zones   []string
	Point   geo.Point
	Located bool
}

// Tier says how near other is to self, a client's own cluster, by their
// labels alone. It is not TierSelf: a cluster knows itself by name.
func Tier(self, other Place) int {
	if self.Region == "" || other.Region != self.Region {
		return TierOther
	}
	for _, z := range other.Zones {
		if slices.Contains(self.Zones, z) {
			return TierZone
		}
	}
	return TierRegion
}

const (
	// tierSpan separates tiers in InsideKey: a tier's RTT keys stay below
	// it (maxRTTKey, unmeasuredKey), so no RTT lifts a cluster into the
	// next tier, and SameRTT never joins two tiers.
	tierSpan      = 64
	unmeasuredKey = 62 // after every measured cluster of its tier
)

// InsideKey is the key Order ranks a cluster by, with slack SameRTT, for a
// client inside another cluster: the cluster's tier (TierSelf …
// TierOther), then its round-trip time from the client's cluster when
// measured, clusters not measured after those measured in their tier.
// Labels stay the first key: no RTT moves a cluster across tiers.
func InsideKey(tier int, rtt time.Duration, measured bool) float64 {
	k := float64(tier * tierSpan)
	if tier == TierSelf {
		return k
	}
	if !measured {
		return k + unmeasuredKey
	}
	return k + RTTKey(rtt)
}

// TierOf is the tier of an InsideKey.
func TierOf(key float64) int { return int(key / tierSpan) }

// Cluster is what ordering knows of one cluster's endpoint.
type Cluster struct {
	Name string
	Place
	// Weight shares queries among equally near clusters; 0 puts the
	// cluster after every healthy one of a positive weight.
	Weight    int
	Unhealthy bool
	// RTT is the round-trip time from the client's cluster to this one,
	// when RTTMeasured: it orders clusters within a tier (FromCluster).
	RTT         time.Duration
	RTTMeasured bool
}

// FromCluster appends to dst the indexes of clusters in the order a client
// inside the cluster named self gets them: self, its zone, its region, the
// rest; within each tier the clusters self reaches materially faster first
// (InsideKey), and weights drawn with intn among the rest (intn(n) returns a
// number in [0, n); rand.IntN fits). Without self among clusters, every
// cluster is in the last tier.
func FromCluster(dst []int, clusters []Cluster, self string, intn func(int) int) []int {
	var own Place
	for _, c := range clusters {
		if c.Name == self {
			own = c.Place
		}
	}
	var buf [16]Rank
	ranks := buf[:0]
	for i, c := range clusters {
		tier := Tier(own, c.Place)
		if c.Name == self {
			tier = TierSelf
		}
		key := InsideKey(tier, c.RTT, c.RTTMeasured)
		ranks = append(ranks, Rank{Key: key, Weight: weight(c.Weight), ID: int16(i), Unhealthy: c.Unhealthy})
	}
	Order(ranks, SameRTT, intn)
	for _, r := range ranks {
		dst = append(dst, int(r.ID))
	}
	return dst
}

// weight is w as a Rank holds it: kfed's weights are at most 2^20.
func weight(w int) int32 { return int32(max(min(w, 1<<30), 0)) }

// FromPoint appends to dst the indexes of clusters in the order a client at
// p gets them: nearest first, weights drawn with intn among clusters whose
// distances are within SameDistance of the nearest not yet placed, clusters
// without a location after those with one.
func FromPoint(dst []int, clusters []Cluster, p geo.Point, intn func(int) int) []int {
	at := geo.Vector(p)
	var buf [16]Rank
	ranks := buf[:0]
	for i, c := range clusters {
		key := math.Inf(1)
		if c.Located {
			key = at.Distance(geo.Vector(c.Point))
		}
		ranks = append(ranks, Rank{Key: key, Weight: weight(c.Weight), ID: int16(i), Unhealthy: c.Unhealthy})
	}
	Order(ranks, SameDistance, intn)
	for _, r := range ranks {
		dst = append(dst, int(r.ID))
	}
	return dst
}

// Rank is one cluster as Order sees it: how far it is (a tier, a distance;
// +Inf for unknown), its weight and health, and the caller's number for it.
// It is small, since the plugin keeps a Service's ranks on the stack of
// every query.
type Rank struct {
	Key       float64
	Weight    int32
	ID        int16
	Unhealthy bool
}

// class puts healthy clusters of a positive weight first, then those of
// weight 0, then the unhealthy.
func (r Rank) class() int {
	switch {
	case r.Unhealthy:
		return 2
	case r.Weight <= 0:
		return 1
	}
	return 0
}

// Order puts ranks in the order a client gets them, nearest first: healthy
// ranks of a positive weight by key, a group at a time (a group starts at
// the lowest key not yet placed and holds every key within slack of it),
// each group's ranks drawn in proportion to their weights with intn; then
// those of weight 0, then the unhealthy, each by key and in their given
// order on a tie.
//
// It orders ranks in place, with no buffer of its own: a query's goroutine
// starts with a small stack, copied whole each time it grows, and every
// frame on the way to the answer counts.
func Order(ranks []Rank, slack float64, intn func(int) int) {
	order(ranks, slack, intn, 0, nil)
}

// order sorts ranks and draws each group that is Drawn: at random with
// intn, or without intn by a race for seed among hashes. (Parameters
// rather than a closure, which would cost every query an allocation.)
func order(ranks []Rank, slack float64, intn func(int) int, seed uint64, hashes []uint64) {
	Sort(ranks)
	for g := 0; g < len(ranks); {
		end := GroupEnd(ranks, g, slack)
		switch {
		case !ranks[g].Drawn():
		case intn != nil:
			drawWeighted(ranks[g:end], intn)
		default:
			race(ranks[g:end], seed, hashes)
		}
		g = end
	}
}

// Sort puts ranks in Order's order before any draw: healthy ranks of a
// positive weight, then those of weight 0, then the unhealthy, each by key
// and in their given order on a tie. Order and anything that explains an
// order (kfed explain) group the result with GroupEnd.
func Sort(ranks []Rank) {
	// Insertion sort: stable, and the fastest for the few clusters a
	// Service has.
	for i := 1; i < len(ranks); i++ {
		for j := i; j > 0 && before(ranks[j], ranks[j-1]); j-- {
			ranks[j], ranks[j-1] = ranks[j-1], ranks[j]
		}
	}
}

// GroupEnd is the end of the group that starts at ranks[start], ranks
// sorted by Sort: the ranks of its class whose keys are within slack of
// its first's. Order draws a group's ranks by weight when they are Drawn,
// and keeps the others in their sorted order.
func GroupEnd(ranks []Rank, start int, slack float64) int {
	first := ranks[start]
	end := start + 1
	for end < len(ranks) && ranks[end].class() == first.class() && ranks[end].Key <= first.Key+slack {
		end++
	}
	return end
}

// Drawn reports whether Order draws r's group by weight: a healthy group of
// a positive weight. Clusters of weight 0 and unhealthy ones keep their
// order by key.
func (r Rank) Drawn() bool { return r.class() == 0 }

func before(a, b Rank) bool {
	if a.class() != b.class() {
		return a.class() < b.class()
	}
	return a.Key < b.Key
}

// OrderFor is Order for one client of many: each group is drawn by a
// weighted rendezvous of seed, a number the client hashes to, with each
// rank's hash, hashes[rank.ID], instead of at random. A hash names a
// cluster: the same cluster must have the same hash wherever and whenever
// it is drawn (its address, hashed, say), and no two of one draw the same.
// Over clients of many seeds the orders are distributed as Order's draws
// are (each rank first in proportion to its weight, and so on down), but
// one client gets the same order while the weights and ranks hold, and a
// change of weights moves only the clients it must: lowering one rank's
// weight moves some of the clients it had first to the others, in
// proportion to theirs, and none between the others. Load-weighed answers
// use it for resolvers' client subnets, so that a subnet stays with its
// cluster and only the share a load moves changes hands (a fresh draw a
// TTL would send every subnet anywhere, and a small cluster's load would
// follow the luck of its draws).
func OrderFor(ranks []Rank, hashes []uint64, slack float64, seed uint64) {
	order(ranks, slack, nil, seed, hashes)
}

// race orders group, ranks of a positive weight, by the time each takes to
// finish a race for seed: −ln(u)/weight, u uniform in (0, 1) and a hash of
// seed and the rank's hash. The times are exponential, of rate the weight,
// so the first to finish is each rank in proportion to its weight, and the
// next among the rest likewise (drawWeighted's law); a rank's time depends
// only on its own weight.
func race(group []Rank, seed uint64, hashes []uint64) {
	var buf [16]float64
	times := buf[:0]
	if len(group) > len(buf) {
		times = make([]float64, 0, len(group))
	}
	for _, r := range group {
		h := stablehash.Mix(seed ^ stablehash.Mix(hashes[r.ID]))
		u := (float64(h>>11) + 0.5) / (1 << 53)
		times = append(times, -math.Log(u)/float64(r.Weight))
	}
	for i := 1; i < len(group); i++ {
		for j := i; j > 0 && times[j] < times[j-1]; j-- {
			times[j], times[j-1] = times[j-1], times[j]
			group[j], group[j-1] = group[j-1], group[j]
		}
	}
}

// Hash is a hash of b that is the same in every process, for OrderFor's
// hashes and seeds.
func Hash(b string) uint64 { return stablehash.String(b) }

// drawWeighted puts group, ranks of a positive weight, in a weighted random
// order, in place: each next one is drawn with a probability proportional to
// its weight among those not drawn yet.
func drawWeighted(group []Rank, intn func(int) int) {
	total := 0
	for _, r := range group {
		total += int(r.Weight)
	}
	for len(group) > 1 {
		r := intn(total)
		j := 0
		for r >= int(group[j].Weight) {
			r -= int(group[j].Weight)
			j++
		}
		// Move the drawn one to the front, keeping the others' order.
		drawn := group[j]
		copy(group[1:j+1], group[:j])
		group[0] = drawn
		total -= int(drawn.Weight)
		group = group[1:]
	}
}
