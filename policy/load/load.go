// Package load is the rule of load-aware answers (pure): how the load an
// endpoint publishes (its utilisation, 1.0 being its target) changes its
// cluster's share of a name's answers, and when a client's own cluster
// stops being answered first. It knows nothing of DNS or of where figures
// come from: the health checkers carry them (in Buckets), the publishers
// weigh a name's clusters with them (Weigh), and the CoreDNS plugin orders
// the answers inside a cluster by them (Spills).
//
// The rule is Envoy's load-aware locality weighting, with NS1's shedding
// above a watermark:
//   - a cluster's share is its capacity (its weight without load: ready
//     replicas, or 1) times its headroom, 1 − utilisation: an endpoint at
//     0.97 gets 3% of what an idle one of the same capacity gets, one at
//     0.30 gets 70%;
//   - at or over its target (utilisation ≥ 1) it has no headroom and is
//     shed: its addresses leave the shared names, as an unhealthy
//     endpoint's do, and come back as it falls under (with the hysteresis
//     of its bucket);
//   - never all shed: when every cluster that can answer is at or over its
//     target, the shares follow capacity alone, as without load;
//   - a cluster without a figure (none published, or one older than its
//     expiry) is weighed at the mean headroom of those with one, so that
//     publishing load neither wins nor loses a cluster share by itself;
//     with no figure at all the weights are those without load.
//
// Figures travel in buckets of Step with hysteresis (Rebucket), so that a
// share moves in steps of a few percent and a figure near an edge does not
// flip; smoothing is the checkers' (an exponentially weighted average of
// the probes' figures).
package load

import "math"

// Constants of the rule.
const (
	// Step is the width of a bucket of utilisation: shares move in steps of
	// 2% of headroom. Finer would write more; coarser would blur what
	// matters most near the target, where 0.97 and 0.93 leave 3% and 7%.
	Step = 0.02
	// Max is the highest utilisation carried; a figure above reads as Max.
	Max = 2.0
	// Spill is how much more loaded than the other clusters' mean a
	// client's own cluster may be and still be answered first: Envoy's
	// margin (traffic stays local while local utilisation ≤ the remote
	// average + 0.1).
	Spill = 0.1
	// Scale multiplies the weights load weighs, so that a share of a few
	// percent is still a whole weight: 1 replica at 0.97 → 3, at 0.30 → 70.
	Scale = 100
	// maxBucket is Max's bucket.
	maxBucket = int(Max / Step)
)

// Bucket is the bucket u falls in, from 0: [b·Step, (b+1)·Step).
func Bucket(u float64) int {
	if !(u > 0) { // NaN too
		return 0
	}
	return min(int(u/Step+1e-9), maxBucket)
}

// Value is the utilisation a bucket is published as: its middle, rounded to
// a thousandth so that a reader of the published value finds the same
// bucket.
func Value(b int) float64 {
	b = max(0, min(b, maxBucket))
	return math.Round((float64(b)+0.5)*Step*1000) / 1000
}

// Rebucket is the bucket to publish for u when b is published now (b < 0:
// none yet): b while u is within half a bucket of it, so that a figure
// near an edge does not flip between two; else u's own bucket.
func Rebucket(b int, u float64) int {
	k := u / Step
	if b >= 0 && k >= float64(b)-0.5 && k < float64(b)+1.5 {
		return b
	}
	return Bucket(u)
}

// Headroom is how much of its target an endpoint at utilisation u has
// left, 0 to 1.
func Headroom(u float64) float64 {
	return max(0, min(1, 1-u))
}

// Row is one cluster of a name as Weigh sees it.
type Row struct {
	// Weight is its capacity: its weight without load.
	Weight int
	// Load is its utilisation, when Known.
	Load  float64
	Known bool
	// Out says it answers no shared name whatever its load (unhealthy,
	// drained, passive): it neither takes a share nor counts toward
	// "every cluster is over".
	Out bool
}

// Result is what Weigh makes of a name's rows.
type Result struct {
	// Weights are each row's weight with load, in row order.
	Weights []int
	// Shed are the rows over their target that leave the shared names.
	Shed []bool
	// Weighed says load changed the weights: some row that can answer has
	// a figure and some has headroom.
	Weighed bool
	// AllOver says every row that can answer, with a figure, is at or over
	// its target: the weights are the capacities.
	AllOver bool
}

// Weigh applies the rule to a name's rows: each row's weight is its
// capacity times its headroom (the mean headroom of the known rows when
// its own is not known), times Scale; a row of positive capacity whose
// share so rounds to nothing is given 1, and one at or over its target is
// shed, unless every row that can answer is (then every weight is its
// capacity and nothing is shed). Rows that are Out keep their capacity.
// Without any figure among the rows that can answer, every weight is its
// capacity.
func Weigh(rows []Row) Result {
	r := Result{Weights: make([]int, len(rows)), Shed: make([]bool, len(rows))}
	known, sum, room := 0, 0.0, false
	for i, row := range rows {
		r.Weights[i] = row.Weight
		if row.Out || !row.Known {
			continue
		}
		h := Headroom(row.Load)
		known++
		sum += h
		room = room || h > 0
	}
	if known == 0 {
		return r
	}
	if !room {
		r.AllOver = true
		return r
	}
	mean := sum / float64(known)
	r.Weighed = true
	for i, row := range rows {
		if row.Out {
			continue
		}
		h := mean
		if row.Known {
			h = Headroom(row.Load)
		}
		if h == 0 {
			r.Weights[i], r.Shed[i] = 0, row.Weight > 0
			continue
		}
		w := math.Round(float64(row.Weight) * h * Scale)
		if row.Weight > 0 && w < 1 {
			w = 1
		}
		r.Weights[i] = int(min(w, math.MaxInt32))
	}
	return r
}

// Spills reports whether a client's own cluster, at utilisation local,
// should no longer be answered first: it has a figure, and it is more than
// Spill above the mean of the other clusters' figures that can answer
// (others). Without a figure on either side it stays first.
func Spills(local float64, localKnown bool, others []float64) bool {
	if !localKnown || len(others) == 0 {
		return false
	}
	sum := 0.0
	for _, u := range others {
		sum += u
	}
	return local > sum/float64(len(others))+Spill
}
