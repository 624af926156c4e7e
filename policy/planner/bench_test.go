package planner

import (
	"fmt"
	"testing"
)

// benchInput is a federation of n clusters with the mix of preferences a
// real object carries: most clusters on "*", every fifth heavier and
// capped, every seventh short of capacity, and a total that does not divide
// evenly.
func benchInput(n int, rebalance bool) Input {
	in := Input{
		Key:   "default/web",
		Total: int64(20*n + 7),
		Preferences: Preferences{
			Rebalance: rebalance,
			Clusters:  map[string]ClusterPreferences{AnyCluster: {Weight: 1}},
		},
		Capacity: map[string]int64{},
		Current:  map[string]int64{},
	}
	for i := range n {
		name := fmt.Sprintf("cluster-%04d", i)
		in.Clusters = append(in.Clusters, name)
		if i%5 == 0 {
			in.Preferences.Clusters[name] = ClusterPreferences{MinReplicas: 2, MaxReplicas: ptr(40), Weight: 2}
		}
		if i%7 == 0 {
			in.Capacity[name] = 8
		}
		in.Current[name] = int64(i * 37 % 50) // a layout from some earlier plan
	}
	return in
}

func ptr(n int64) *int64 { return &n }

func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{3, 50, 1000} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			benchmarkPlan(b, benchInput(n, true))
		})
	}
}

// BenchmarkPlanNoRebalance plans the same federations keeping running
// replicas, where every cluster starts from its own floor.
func BenchmarkPlanNoRebalance(b *testing.B) {
	for _, n := range []int{3, 50, 1000} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			benchmarkPlan(b, benchInput(n, false))
		})
	}
}

func benchmarkPlan(b *testing.B, in Input) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Plan(in); err != nil {
			b.Fatal(err)
		}
	}
}
