package proximity

import (
	"slices"
	"testing"
	"time"
)

func rtt(c Cluster, d time.Duration) Cluster {
	c.RTT, c.RTTMeasured = d, true
	return c
}

func TestFromClusterByRTT(t *testing.T) {
	const ms = time.Millisecond
	var (
		self = at("self", "", nil, nil, 1) // no labels: every other cluster is in the last tier
		a    = at("a", "", nil, nil, 1)
		b    = at("b", "", nil, nil, 1)
		c    = at("c", "", nil, nil, 1)
		// peer shares self's region: labels come before any RTT.
		regional = at("regional", "us-east1", nil, nil, 1)
		labelled = at("labelled", "us-east1", nil, nil, 1)
	)
	tests := []struct {
		name     string
		clusters []Cluster
		self     string
		intn     func(int) int
		want     []string
	}{
		{"loopback RTTs are too close to matter: weights decide", []Cluster{self, rtt(a, 100*time.Microsecond), rtt(b, 300*time.Microsecond)}, "self", last, []string{"self", "b", "a"}},
		{"a few milliseconds apart are too close to matter", []Cluster{self, rtt(a, 1*ms), rtt(b, 3*ms)}, "self", last, []string{"self", "b", "a"}},
		{"a material difference orders the tier, whatever the draw", []Cluster{self, rtt(a, 80*ms), rtt(b, 10*ms)}, "self", last, []string{"self", "b", "a"}},
		{"clusters of about one RTT share by weight, ahead of a slower one", []Cluster{self, rtt(c, 150*ms), rtt(a, 20*ms), rtt(b, 21*ms)}, "self", last, []string{"self", "b", "a", "c"}},
		{"a cluster not measured comes after the measured ones of its tier", []Cluster{self, a, rtt(b, 200*ms)}, "self", first, []string{"self", "b", "a"}},
		{"no cluster measured: weights alone", []Cluster{self, a, b}, "self", last, []string{"self", "b", "a"}},
		{"labels first: a slow cluster of the own region before a fast one elsewhere", []Cluster{rtt(labelled, 0), rtt(a, 1*ms), rtt(regional, 300*ms)}, "labelled", first, []string{"labelled", "regional", "a"}},
		{"unhealthy stays last however near", []Cluster{self, func() Cluster { c := rtt(a, ms); c.Unhealthy = true; return c }(), rtt(b, 90*ms)}, "self", first, []string{"self", "b", "a"}},
		{"weight 0 stays after the healthy, however near", []Cluster{self, rtt(weight0(a), ms), rtt(b, 90*ms)}, "self", first, []string{"self", "b", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := names(tt.clusters, FromCluster(nil, tt.clusters, tt.self, tt.intn))
			if !slices.Equal(got, tt.want) {
				t.Errorf("order %v, want %v", got, tt.want)
			}
		})
	}
}

func weight0(c Cluster) Cluster { c.Weight = 0; return c }

// Published buckets: adjacent ones never order two clusters, two apart
// always do, and a bucket's published RTT reads back as that bucket.
func TestBucketsAndSlack(t *testing.T) {
	for b := range 40 {
		d := BucketRTT(b)
		if got := Bucket(d); got != b {
			t.Fatalf("BucketRTT(%d) = %v, which is in bucket %d", b, d, got)
		}
		next, twoOn := RTTKey(BucketRTT(b+1))-RTTKey(d), RTTKey(BucketRTT(b+2))-RTTKey(d)
		if next > SameRTT {
			t.Errorf("buckets %d and %d (%v, %v) are %.2f apart: adjacent buckets would be ordered", b, b+1, d, BucketRTT(b+1), next)
		}
		if twoOn <= SameRTT {
			t.Errorf("buckets %d and %d (%v, %v) are %.2f apart: they would share a group", b, b+2, d, BucketRTT(b+2), twoOn)
		}
	}
}

func TestRebucketHasHysteresis(t *testing.T) {
	const ms = time.Millisecond
	b := Bucket(50 * ms)
	tests := []struct {
		name string
		from int
		d    time.Duration
		want int
	}{
		{"the first measure takes its own bucket", -1, 50 * ms, b},
		{"a measure just past the bucket's upper edge keeps it", b, edge(b+1) + 100*time.Microsecond, b},
		{"a measure just under the bucket's lower edge keeps it", b, edge(b) - 100*time.Microsecond, b},
		{"a measure a quarter unit past the edge moves", b, 70 * ms, Bucket(70 * ms)},
		{"a measure far below moves", b, ms, Bucket(ms)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Rebucket(tt.from, tt.d); got != tt.want {
				t.Errorf("Rebucket(%d, %v) = %d, want %d", tt.from, tt.d, got, tt.want)
			}
		})
	}
}

// edge is the lowest RTT of bucket b.
func edge(b int) time.Duration {
	lo, hi := time.Duration(0), time.Hour
	for hi-lo > time.Microsecond {
		mid := (lo + hi) / 2
		if Bucket(mid) >= b {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

func TestInsideKeyKeepsTiersApart(t *testing.T) {
	if slow, next := InsideKey(TierZone, time.Hour, true), InsideKey(TierRegion, 0, true); slow+SameRTT >= next {
		t.Errorf("the slowest cluster of a zone (%v) is within slack of the fastest of the region (%v)", slow, next)
	}
	if unmeasured, next := InsideKey(TierRegion, 0, false), InsideKey(TierOther, 0, true); unmeasured+SameRTT >= next {
		t.Errorf("an unmeasured cluster of the region (%v) is within slack of the next tier (%v)", unmeasured, next)
	}
	if InsideKey(TierSelf, time.Second, true) != 0 {
		t.Error("the own cluster is not first whatever its RTT")
	}
}

func TestTierOfReadsTheTierBackFromAnInsideKey(t *testing.T) {
	for _, tier := range []int{TierSelf, TierZone, TierRegion, TierOther} {
		for _, k := range []float64{InsideKey(tier, 0, true), InsideKey(tier, time.Hour, true), InsideKey(tier, 0, false)} {
			if got := TierOf(k); got != tier {
				t.Errorf("TierOf(%v) = %d, want %d", k, got, tier)
			}
		}
	}
}
