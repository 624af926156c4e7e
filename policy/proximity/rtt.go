package proximity

import (
	"math"
	"time"
)

// Round-trip times order clusters that labels do not tell apart: within a
// tier, the clusters a client's own cluster reaches faster come first. What
// counts is a material difference only, so that loopback, one data centre
// or jitter never overrides weights, and an order once reached does not
// flap. The rule is one scale, shared by whoever measures RTTs (the health
// checkers, which publish them in buckets) and whoever orders by them (the
// plugin):
//
//	key(d) = ln(1 + d/20ms) / ln(1.25)
//
// One unit of key is a quarter more RTT, plus 5 ms: 0 ms and 5 ms are a
// unit apart, as are 100 ms and 130 ms. A checker publishes an RTT as the
// bucket of half a unit it falls in (Bucket, BucketRTT), and keeps it until
// the measure leaves the bucket by a quarter unit more (Rebucket); ordering
// puts two clusters' RTTs in one group, where weights share queries, when
// their keys are within SameRTT (three quarters of a unit) of the group's
// fastest: RTTs in adjacent buckets are never ordered, RTTs two buckets
// apart always are.
const (
	rttScale = 20 * time.Millisecond
	// SameRTT is the slack of an order by RTT keys: keys within it of a
	// group's fastest share the group.
	SameRTT   = 0.75
	maxRTTKey = 60 // about 13 minutes: more is as slow
)

var lnStep = math.Log(1.25)

// RTTKey is where d lies on the scale RTTs are compared on.
func RTTKey(d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return min(math.Log1p(float64(d)/float64(rttScale))/lnStep, maxRTTKey)
}

// Bucket is the bucket of half a key unit that d falls in, from 0.
func Bucket(d time.Duration) int { return int(2 * RTTKey(d)) }

// BucketRTT is the RTT a bucket is published as: its middle, to 100 µs,
// so a reader of the published value finds the same bucket.
func BucketRTT(b int) time.Duration {
	d := float64(rttScale) * math.Expm1((float64(max(b, 0))+0.5)/2*lnStep)
	return time.Duration(d).Round(100 * time.Microsecond)
}

// Rebucket is the bucket to publish for d when b is published now (b < 0:
// none yet): b while d is within a quarter unit of it, so that a measure
// near a bucket's edge does not flip between the two; else d's own bucket.
func Rebucket(b int, d time.Duration) int {
	k := 2 * RTTKey(d)
	if b >= 0 && k >= float64(b)-0.5 && k < float64(b)+1.5 {
		return b
	}
	return int(k)
}
