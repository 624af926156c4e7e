package planner

import (
	"fmt"
	"maps"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
)

// The properties of issue 3, checked on many random federations. The
// generator favours small numbers, shared "*" entries, equal weights and
// tight caps, where rounding and ties decide the outcome.

func randomInput(r *rand.Rand) Input { return randomFederation(r, 6) }

// randomFederation draws up to n clusters.
func randomFederation(r *rand.Rand, n int) Input {
	in := Input{
		Key:         fmt.Sprintf("ns/obj-%d", r.IntN(1000)),
		Total:       int64(r.IntN(80)),
		Preferences: Preferences{Rebalance: r.IntN(2) == 0, Clusters: map[string]ClusterPreferences{}},
		Capacity:    map[string]int64{},
		Current:     map[string]int64{},
	}
	if r.IntN(4) != 0 {
		in.Preferences.Clusters[AnyCluster] = randomPreference(r)
	}
	for i := range 1 + r.IntN(n) {
		name := fmt.Sprintf("c%d", i)
		in.Clusters = append(in.Clusters, name)
		if r.IntN(3) == 0 {
			in.Preferences.Clusters[name] = randomPreference(r)
		}
		if r.IntN(3) == 0 {
			in.Capacity[name] = int64(r.IntN(25))
		}
		if r.IntN(2) == 0 {
			in.Current[name] = int64(r.IntN(40))
		}
	}
	in.Preferences.Clusters["offline"] = randomPreference(r) // ignored
	in.Current["offline"] = 7                                // ignored
	return in
}

func randomPreference(r *rand.Rand) ClusterPreferences {
	weights := []int64{0, 1, 1, 1, 2, 3, 5, 1000000}
	p := ClusterPreferences{Weight: weights[r.IntN(len(weights))]}
	if r.IntN(3) == 0 {
		p.MinReplicas = int64(r.IntN(10))
	}
	if r.IntN(3) == 0 {
		p.MaxReplicas = ptr(p.MinReplicas + int64(r.IntN(20)))
	}
	return p
}

// model is what the preferences say about one cluster, worked out apart
// from the planner.
type model struct {
	has     bool
	weight  int64
	min     int64 // minReplicas capped by limit
	limit   int64
	bounded bool
	kept    int64 // without rebalance: current replicas capped by limit
}

func modelOf(in Input) map[string]model {
	out := map[string]model{}
	for _, name := range in.Clusters {
		p, ok := in.Preferences.For(name)
		m := model{has: ok, bounded: true}
		if ok {
			m.weight, m.bounded = p.Weight, p.MaxReplicas != nil
			if m.bounded {
				m.limit = *p.MaxReplicas
			}
			if c, ok := in.Capacity[name]; ok && (!m.bounded || c < m.limit) {
				m.limit, m.bounded = c, true
			}
			m.min = p.MinReplicas
		}
		if m.bounded {
			m.min = min(m.min, m.limit)
		}
		if !in.Preferences.Rebalance {
			m.kept = in.Current[name]
			if m.bounded {
				m.kept = min(m.kept, m.limit)
			}
		}
		out[name] = m
	}
	return out
}

// exactLayout returns the exact (fractional) weighted layout when every
// minimum fits in the total: minimums, what runs already (without
// rebalance), and the rest by weight with water-filling.
func exactLayout(in Input, ms map[string]model) map[string]*big.Rat {
	var s []share
	var names []string
	var seats = in.Total
	exact := map[string]*big.Rat{}
	for _, name := range in.Clusters {
		m := ms[name]
		lo := max(m.min, m.kept)
		seats -= lo
		if m.weight == 0 {
			exact[name] = new(big.Rat).SetInt64(lo)
			continue
		}
		sh := share{weight: uint64(m.weight), floor: uint64(lo - m.min), capped: m.bounded}
		if m.bounded {
			sh.cap = uint64(m.limit - m.min)
		}
		s = append(s, sh)
		names = append(names, name)
	}
	if len(s) > 0 {
		for i, a := range exactAmounts(s, uint64(seats)) {
			exact[names[i]] = a.Add(a, new(big.Rat).SetInt64(ms[names[i]].min))
		}
	}
	return exact
}

func TestPlanProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 3300 {
		in := randomInput(r)
		if i >= 3000 {
			// Larger federations, with more distinct claims than the
			// planner scans before it indexes them.
			in = randomFederation(r, 60)
			in.Total = int64(r.IntN(600))
		}
		got := mustPlan(t, in)
		checkPlan(t, in, got)

		// Deterministic, and the order of the cluster list does not matter.
		again := in
		again.Clusters = append([]string(nil), in.Clusters...)
		r.Shuffle(len(again.Clusters), func(i, j int) { again.Clusters[i], again.Clusters[j] = again.Clusters[j], again.Clusters[i] })
		if other := mustPlan(t, again); !maps.Equal(other.Replicas, got.Replicas) || !maps.Equal(other.Overflow, got.Overflow) {
			t.Fatalf("%s\nplanned %v, and %v with the clusters listed as %v", describe(in), got, other, again.Clusters)
		}

		// House monotone: one more replica takes none from any cluster.
		more := in
		more.Total++
		bigger := mustPlan(t, more)
		for name, n := range got.Replicas {
			if bigger.Replicas[name] < n {
				t.Fatalf("%s\n%d replicas give %v, %d give %v: %s lost one", describe(in), in.Total, got.Replicas, more.Total, bigger.Replicas, name)
			}
		}
	}
}

// checkPlan checks one plan against the properties of issue 3.
func checkPlan(t *testing.T, in Input, got Result) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s\nplan %v: %s", describe(in), got, fmt.Sprintf(format, args...))
	}
	ms := modelOf(in)
	if len(got.Replicas) != len(in.Clusters) {
		fail("want an entry for each of %d clusters", len(in.Clusters))
	}
	var sum, mins, kept, holdable int64
	for _, name := range in.Clusters {
		m, n := ms[name], got.Replicas[name]
		if n < 0 || (m.bounded && n > m.limit) {
			fail("%s has %d, outside [0, %d]", name, n, m.limit)
		}
		sum += n
		mins += m.min
		kept += max(m.min, m.kept)
		switch {
		case m.weight > 0 && !m.bounded:
			holdable += 1 << 40
		case m.weight > 0:
			holdable += m.limit
		default:
			holdable += max(m.min, m.kept)
		}
	}
	if mins > in.Total {
		// Minimums are met in order until the total runs out.
		if sum != in.Total {
			fail("sum %d, want the total %d (minimums exceed it)", sum, in.Total)
		}
		return
	}
	for _, name := range in.Clusters {
		if got.Replicas[name] < ms[name].min {
			fail("%s has %d, below its minimum %d", name, got.Replicas[name], ms[name].min)
		}
	}
	if kept > in.Total {
		checkScaleDown(t, in, got, ms)
		return
	}
	if want := min(in.Total, holdable); sum != want {
		fail("sum %d, want min(total, what the clusters can hold) = %d", sum, want)
	}
	exact := exactLayout(in, ms)
	for _, name := range in.Clusters {
		m, n := ms[name], got.Replicas[name]
		if n < m.kept {
			fail("%s runs %d, planned %d: without rebalance running replicas stay", name, m.kept, n)
		}
		diff := new(big.Rat).Sub(new(big.Rat).SetInt64(n), exact[name])
		if diff.Cmp(big.NewRat(1, 1)) >= 0 || diff.Cmp(big.NewRat(-1, 1)) <= 0 {
			fail("%s has %d, exact weighted share %s: more than one replica away", name, n, exact[name].FloatString(2))
		}
	}
	checkOverflow(t, in, got, sum)
}

// checkScaleDown checks a plan without rebalance for fewer replicas than
// run: replicas go only from clusters above their weighted share, furthest
// above first.
func checkScaleDown(t *testing.T, in Input, got Result, ms map[string]model) {
	t.Helper()
	fresh := in
	fresh.Preferences.Rebalance = true
	share := mustPlan(t, fresh).Replicas
	var sum int64
	for _, name := range in.Clusters {
		sum += got.Replicas[name]
	}
	if sum != in.Total {
		t.Fatalf("%s\nplan %v: sum %d, want %d", describe(in), got, sum, in.Total)
	}
	for _, j := range in.Clusters {
		m, n := ms[j], got.Replicas[j]
		lo := max(m.min, m.kept)
		if n > lo || n < min(lo, share[j]) {
			t.Fatalf("%s\nplan %v: %s has %d, want between min(%d kept, %d share) and %d", describe(in), got, j, n, lo, share[j], lo)
		}
		if n == lo {
			continue
		}
		// j was cut: nobody may stay more than one further above share.
		for _, i := range in.Clusters {
			if got.Replicas[i]-share[i] > n-share[j]+1 {
				t.Fatalf("%s\nplan %v, weighted shares %v: %s was cut to %d above its share while %s stays %d above",
					describe(in), got, share, j, n-share[j], i, got.Replicas[i]-share[i])
			}
		}
	}
}

// checkOverflow checks that overflow only names clusters whose capacity
// stopped them, and adds up to no more than what was not placed.
func checkOverflow(t *testing.T, in Input, got Result, placed int64) {
	t.Helper()
	var sum int64
	for name, n := range got.Overflow {
		p, _ := in.Preferences.For(name)
		c, limited := in.Capacity[name]
		if n <= 0 || !limited || (p.MaxReplicas != nil && *p.MaxReplicas <= c) {
			t.Fatalf("%s\nplan %v: overflow on %s, which capacity does not limit", describe(in), got, name)
		}
		if p.MaxReplicas != nil && n > *p.MaxReplicas-c {
			t.Fatalf("%s\nplan %v: overflow %d on %s beyond its max", describe(in), got, n, name)
		}
		sum += n
	}
	if sum > in.Total-placed {
		t.Fatalf("%s\nplan %v: overflow %d, but only %d were not placed", describe(in), got, sum, in.Total-placed)
	}
}

func mustPlan(t *testing.T, in Input) Result {
	t.Helper()
	got, err := Plan(in)
	if err != nil {
		t.Fatalf("%s\n%v", describe(in), err)
	}
	return got
}

func describe(in Input) string {
	s := fmt.Sprintf("key %q total %d clusters %v rebalance %v capacity %v current %v preferences",
		in.Key, in.Total, in.Clusters, in.Preferences.Rebalance, in.Capacity, in.Current)
	for _, name := range slices.Sorted(maps.Keys(in.Preferences.Clusters)) {
		p := in.Preferences.Clusters[name]
		max := "none"
		if p.MaxReplicas != nil {
			max = fmt.Sprint(*p.MaxReplicas)
		}
		s += fmt.Sprintf(" %s:{min %d max %s weight %d}", name, p.MinReplicas, max, p.Weight)
	}
	return s
}
