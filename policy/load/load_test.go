package load_test

import (
	"slices"
	"testing"

	"github.com/kfed-io/kfed/policy/load"
)

func TestWeigh(t *testing.T) {
	known := func(w int, u float64) load.Row { return load.Row{Weight: w, Load: u, Known: true} }
	for _, tc := range []struct {
		name    string
		rows    []load.Row
		weights []int
		shed    []int // indexes
		weighed bool
		allOver bool
	}{
		{name: "no figure: capacities", rows: []load.Row{{Weight: 1}, {Weight: 3}}, weights: []int{1, 3}},
		{name: "0.97 against 0.30: a few percent", rows: []load.Row{known(1, 0.97), known(1, 0.30), known(1, 0.30)},
			weights: []int{3, 70, 70}, weighed: true},
		{name: "headroom times capacity", rows: []load.Row{known(4, 0.5), known(2, 0)}, weights: []int{200, 200}, weighed: true},
		{name: "over target: shed", rows: []load.Row{known(1, 1.2), known(1, 0.3)}, weights: []int{0, 70}, shed: []int{0}, weighed: true},
		{name: "exactly at target: shed", rows: []load.Row{known(1, 1.0), known(1, 0.3)}, weights: []int{0, 70}, shed: []int{0}, weighed: true},
		{name: "every one at 0.97: in proportion, none leaves", rows: []load.Row{known(1, 0.97), known(2, 0.97)},
			weights: []int{3, 6}, weighed: true},
		{name: "every one over: capacities, none shed", rows: []load.Row{known(1, 1.5), known(3, 1.1)},
			weights: []int{1, 3}, allOver: true},
		{name: "no figure: the mean headroom of the others", rows: []load.Row{known(1, 0.2), known(1, 0.6), {Weight: 1}},
			weights: []int{80, 40, 60}, weighed: true},
		{name: "a tiny share keeps weight 1", rows: []load.Row{known(1, 0.999), known(1, 0)}, weights: []int{1, 100}, weighed: true},
		{name: "capacity 0 stays 0", rows: []load.Row{known(0, 0.1), known(1, 0.1)}, weights: []int{0, 90}, weighed: true},
		{name: "out rows keep their capacity and do not count", rows: []load.Row{{Weight: 2, Load: 0.1, Known: true, Out: true}, known(1, 1.3), known(1, 1.1)},
			weights: []int{2, 1, 1}, allOver: true},
		{name: "out rows' figures are not the mean", rows: []load.Row{{Weight: 1, Load: 0, Known: true, Out: true}, known(1, 0.5), {Weight: 1}},
			weights: []int{1, 50, 50}, weighed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := load.Weigh(tc.rows)
			if !slices.Equal(r.Weights, tc.weights) {
				t.Errorf("weights %v, want %v", r.Weights, tc.weights)
			}
			var shed []int
			for i, s := range r.Shed {
				if s {
					shed = append(shed, i)
				}
			}
			if !slices.Equal(shed, tc.shed) {
				t.Errorf("shed %v, want %v", shed, tc.shed)
			}
			if r.Weighed != tc.weighed || r.AllOver != tc.allOver {
				t.Errorf("weighed %v, all over %v; want %v, %v", r.Weighed, r.AllOver, tc.weighed, tc.allOver)
			}
		})
	}
}

// A figure moves its bucket only once it leaves it by half a bucket, and
// the published value reads back as the same bucket.
func TestRebucket(t *testing.T) {
	for _, tc := range []struct {
		was  int
		u    float64
		want int
	}{
		{-1, 0.30, 15},
		{-1, 0.97, 48},
		{-1, 7, 100},
		{-1, -1, 0},
		{15, 0.291, 15}, // within half a bucket below: kept
		{15, 0.289, 14}, // more: moved
		{15, 0.329, 15}, // within the next bucket's first half: kept
		{15, 0.331, 16}, // past it
		{48, 0.989, 48},
		{48, 0.992, 49},
	} {
		if got := load.Rebucket(tc.was, tc.u); got != tc.want {
			t.Errorf("Rebucket(%d, %v) = %d, want %d", tc.was, tc.u, got, tc.want)
		}
	}
	for b := 0; b <= 100; b++ {
		if got := load.Bucket(load.Value(b)); got != b {
			t.Errorf("Bucket(Value(%d) = %v) = %d", b, load.Value(b), got)
		}
	}
}

func TestSpills(t *testing.T) {
	for _, tc := range []struct {
		local  float64
		known  bool
		others []float64
		want   bool
	}{
		{0.975, true, []float64{0.325, 0.325}, true},
		{0.4, true, []float64{0.325, 0.325}, false}, // within the margin
		{0.45, true, []float64{0.325, 0.325}, true},
		{0.975, true, []float64{0.975, 0.975}, false}, // all alike
		{0.975, false, []float64{0.3}, false},         // no figure of its own
		{0.975, true, nil, false},                     // none to compare with
	} {
		if got := load.Spills(tc.local, tc.known, tc.others); got != tc.want {
			t.Errorf("Spills(%v, %v, %v) = %v, want %v", tc.local, tc.known, tc.others, got, tc.want)
		}
	}
}
