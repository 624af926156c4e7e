package planner

import (
	"fmt"
	"maps"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestPlanBalancer(t *testing.T) {
	ab := []string{"a", "b"}
	limits := func(entries ...any) map[string]ClusterPreferences {
		m := map[string]ClusterPreferences{}
		for i := 0; i < len(entries); i += 2 {
			m[entries[i].(string)] = entries[i+1].(ClusterPreferences)
		}
		return m
	}
	tests := []struct {
		name         string
		in           BalancerInput
		want         map[string]int64
		wantOverflow map[string]int64
	}{
		{
			name: "priority fills the first target when it has no max",
			in:   BalancerInput{Total: 10, Targets: ab, Policy: Priority, TargetOrder: ab},
			want: map[string]int64{"a": 10, "b": 0},
		},
		{
			name: "priority fills the first target up to its max, then the next",
			in: BalancerInput{Total: 10, Targets: ab, Policy: Priority, TargetOrder: ab,
				Preferences: limits("a", ClusterPreferences{MaxReplicas: ptr(3)})},
			want: map[string]int64{"a": 3, "b": 7},
		},
		{
			name: "priority leaves replicas beyond every max unplaced, which is not overflow",
			in: BalancerInput{Total: 10, Targets: ab, Policy: Priority, TargetOrder: ab,
				Preferences: limits("a", ClusterPreferences{MaxReplicas: ptr(3)}, "b", ClusterPreferences{MaxReplicas: ptr(4)})},
			want: map[string]int64{"a": 3, "b": 4},
		},
		{
			name: "priority meets minimums first, then follows the order",
			in: BalancerInput{Total: 10, Targets: ab, Policy: Priority, TargetOrder: ab,
				Preferences: limits("a", ClusterPreferences{MinReplicas: 2}, "b", ClusterPreferences{MinReplicas: 3})},
			want: map[string]int64{"a": 7, "b": 3},
		},
		{
			name: "minimums are met even when they add up to more than the total",
			in: BalancerInput{Total: 1, Targets: ab, Policy: Priority, TargetOrder: ab,
				Preferences: limits("a", ClusterPreferences{MinReplicas: 2}, "b", ClusterPreferences{MinReplicas: 3})},
			want: map[string]int64{"a": 2, "b": 3},
		},
		{
			name: "a target missing from targetOrder gets only its minimum",
			in: BalancerInput{Total: 10, Targets: []string{"a", "b", "c"}, Policy: Priority, TargetOrder: ab,
				Preferences: limits("c", ClusterPreferences{MinReplicas: 1})},
			want: map[string]int64{"a": 9, "b": 0, "c": 1},
		},
		{
			name: "pods not started past the timeout fall back to the next target, with the new pods of the blocked one",
			in: BalancerInput{Total: 10, Targets: ab, Policy: Priority, TargetOrder: ab,
				Current: map[string]int64{"a": 3}, NotStarted: map[string]int64{"a": 2}},
			want: map[string]int64{"a": 10, "b": 9},
		},
		{
			name: "a blocked target at its planned size falls back exactly its not-started pods",
			in: BalancerInput{Total: 10, Targets: ab, Policy: Priority, TargetOrder: ab,
				Current: map[string]int64{"a": 10}, NotStarted: map[string]int64{"a": 3}},
			want: map[string]int64{"a": 10, "b": 3},
		},
		{
			name: "fallback that no target takes is overflow on the blocked target it came from",
			in: BalancerInput{Total: 10, Targets: ab, Policy: Priority, TargetOrder: ab,
				Current: map[string]int64{"a": 3, "b": 3}, NotStarted: map[string]int64{"a": 2, "b": 2}},
			want:         map[string]int64{"a": 10, "b": 9},
			wantOverflow: map[string]int64{"b": 8},
		},
		{
			name: "fallback stops at max",
			in: BalancerInput{Total: 20, Targets: ab, Policy: Priority, TargetOrder: ab,
				Preferences: limits(AnyCluster, ClusterPreferences{MaxReplicas: ptr(10)}),
				Current:     map[string]int64{"a": 3, "b": 3}, NotStarted: map[string]int64{"a": 2, "b": 2}},
			want:         map[string]int64{"a": 10, "b": 10},
			wantOverflow: map[string]int64{"a": 9, "b": 9},
		},
		{
			name: "a scale-down counts removed pods against the not-started ones",
			in: BalancerInput{Total: 10, Targets: ab, Policy: Priority, TargetOrder: ab,
				Preferences: limits(AnyCluster, ClusterPreferences{MaxReplicas: ptr(10)}),
				Current:     map[string]int64{"a": 15}, NotStarted: map[string]int64{"a": 2}},
			want: map[string]int64{"a": 10, "b": 0},
		},
		{
			name: "proportional shares by proportion",
			in: BalancerInput{Total: 12, Targets: []string{"a", "b", "c"}, Policy: Proportional,
				Proportions: map[string]int64{"a": 1, "b": 1, "c": 2}},
			want: map[string]int64{"a": 3, "b": 3, "c": 6},
		},
		{
			name: "proportional hands a full target's share to the others",
			in: BalancerInput{Total: 9, Targets: []string{"a", "b", "c"}, Policy: Proportional,
				Proportions: map[string]int64{"a": 1, "b": 1, "c": 1},
				Preferences: limits("a", ClusterPreferences{MaxReplicas: ptr(1)})},
			want: map[string]int64{"a": 1, "b": 4, "c": 4},
		},
		{
			name: "proportional minimums are floors inside the share of the total",
			in: BalancerInput{Total: 10, Targets: ab, Policy: Proportional,
				Proportions: map[string]int64{"a": 1, "b": 1},
				Preferences: limits("a", ClusterPreferences{MinReplicas: 3}, "b", ClusterPreferences{MinReplicas: 8})},
			want: map[string]int64{"a": 3, "b": 8},
		},
		{
			name: "proportional gives a minimum below the share nothing extra",
			in: BalancerInput{Total: 10, Targets: ab, Policy: Proportional,
				Proportions: map[string]int64{"a": 1, "b": 1},
				Preferences: limits("a", ClusterPreferences{MinReplicas: 3})},
			want: map[string]int64{"a": 5, "b": 5},
		},
		{
			name: "proportional gives a target without proportion its minimum only",
			in: BalancerInput{Total: 10, Targets: []string{"a", "b", "c"}, Policy: Proportional,
				Proportions: map[string]int64{"a": 1, "b": 1},
				Preferences: limits("c", ClusterPreferences{MinReplicas: 2})},
			want: map[string]int64{"a": 4, "b": 4, "c": 2},
		},
		{
			name: "proportional fallback goes by proportion to the targets that are not blocked",
			in: BalancerInput{Total: 12, Targets: []string{"a", "b", "c"}, Policy: Proportional,
				Proportions: map[string]int64{"a": 1, "b": 1, "c": 2},
				Current:     map[string]int64{"a": 3}, NotStarted: map[string]int64{"a": 3}},
			want: map[string]int64{"a": 3, "b": 4, "c": 8},
		},
		{
			name: "proportional fallback beyond every max is overflow on the blocked target",
			in: BalancerInput{Total: 4, Targets: ab, Policy: Proportional,
				Proportions: map[string]int64{"a": 1, "b": 1},
				Preferences: limits(AnyCluster, ClusterPreferences{MaxReplicas: ptr(3)}),
				Current:     map[string]int64{"a": 2}, NotStarted: map[string]int64{"a": 2}},
			want:         map[string]int64{"a": 2, "b": 3},
			wantOverflow: map[string]int64{"a": 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Key = "default/web"
			got, err := PlanBalancer(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got.Replicas, tt.want) {
				t.Errorf("replicas %v, want %v", got.Replicas, tt.want)
			}
			if tt.wantOverflow == nil {
				tt.wantOverflow = map[string]int64{}
			}
			if !maps.Equal(got.Overflow, tt.wantOverflow) {
				t.Errorf("overflow %v, want %v", got.Overflow, tt.wantOverflow)
			}
		})
	}
}

func TestPlanBalancerRejectsInvalidInput(t *testing.T) {
	valid := func() BalancerInput {
		return BalancerInput{Key: "k", Total: 5, Targets: []string{"a", "b"}, Policy: Priority, TargetOrder: []string{"a", "b"}}
	}
	tests := []struct {
		name   string
		change func(*BalancerInput)
		want   string
	}{
		{"unknown policy", func(in *BalancerInput) { in.Policy = "random" }, `unknown policy "random"`},
		{"priority without targetOrder", func(in *BalancerInput) { in.TargetOrder = nil }, "needs targetOrder"},
		{"priority target that does not exist", func(in *BalancerInput) { in.TargetOrder = []string{"a", "x"} }, `targetOrder[1]: "x" is not in clusters`},
		{"priority target listed twice", func(in *BalancerInput) { in.TargetOrder = []string{"a", "a"} }, `targetOrder[1]: "a" is listed twice`},
		{"proportions with priority", func(in *BalancerInput) { in.Proportions = map[string]int64{"a": 1} }, "proportions only apply"},
		{"proportional without proportions", func(in *BalancerInput) { in.Policy, in.TargetOrder = Proportional, nil }, "needs proportions"},
		{"proportions for an unknown target", func(in *BalancerInput) {
			in.Policy, in.TargetOrder, in.Proportions = Proportional, nil, map[string]int64{"a": 1, "zz": 1}
		}, `proportions names "zz", which is not in clusters`},
		{"negative proportion", func(in *BalancerInput) {
			in.Policy, in.TargetOrder, in.Proportions = Proportional, nil, map[string]int64{"a": -1}
		}, `proportions["a"] -1 is negative`},
		{"max below min", func(in *BalancerInput) {
			in.Preferences = map[string]ClusterPreferences{"a": {MinReplicas: 4, MaxReplicas: ptr(2)}}
		}, `preferences["a"]: maxReplicas 2 is less than minReplicas 4`},
		{"weight with a policy", func(in *BalancerInput) {
			in.Preferences = map[string]ClusterPreferences{"a": {Weight: 1}}
		}, `preferences["a"]: weight is not used by the priority policy`},
		{"preferences for an unknown target", func(in *BalancerInput) {
			in.Preferences = map[string]ClusterPreferences{"zz": {}}
		}, `preferences names "zz"`},
		{"negative notStarted", func(in *BalancerInput) { in.NotStarted = map[string]int64{"a": -1} }, `notStarted["a"] -1 is negative`},
		{"more not started than pods", func(in *BalancerInput) {
			in.Current, in.NotStarted = map[string]int64{"a": 1}, map[string]int64{"a": 2}
		}, `notStarted["a"] is 2 but current["a"] is 1`},
		{"current for an unknown target", func(in *BalancerInput) { in.Current = map[string]int64{"zz": 1} }, `current names "zz"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := valid()
			tt.change(&in)
			if _, err := PlanBalancer(in); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func randomBalancer(r *rand.Rand) BalancerInput {
	in := BalancerInput{
		Key:         fmt.Sprintf("ns/b-%d", r.IntN(100)),
		Total:       int64(r.IntN(60)),
		Preferences: map[string]ClusterPreferences{},
		Current:     map[string]int64{},
		NotStarted:  map[string]int64{},
	}
	n := 1 + r.IntN(5)
	for i := range n {
		name := fmt.Sprintf("t%d", i)
		in.Targets = append(in.Targets, name)
		p := randomPreference(r)
		p.Weight = 0
		if r.IntN(2) == 0 {
			in.Preferences[name] = p
		}
		if r.IntN(2) == 0 {
			pods := int64(r.IntN(20))
			in.Current[name] = pods
			if r.IntN(3) == 0 {
				in.NotStarted[name] = int64(r.IntN(int(pods) + 1))
			}
		}
	}
	if r.IntN(2) == 0 {
		in.Policy = Priority
		for _, i := range r.Perm(n)[:1+r.IntN(n)] {
			in.TargetOrder = append(in.TargetOrder, in.Targets[i])
		}
	} else {
		in.Policy = Proportional
		in.Proportions = map[string]int64{}
		for _, name := range in.Targets {
			if r.IntN(4) != 0 {
				in.Proportions[name] = []int64{0, 1, 1, 2, 3, 7}[r.IntN(6)]
			}
		}
	}
	return in
}

func TestPlanBalancerProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 3000 {
		in := randomBalancer(r)
		got, err := PlanBalancer(in)
		if err != nil {
			t.Fatalf("%+v: %v", in, err)
		}
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("%+v\nplan %v: %s", in, got, fmt.Sprintf(format, args...))
		}
		steady := in
		steady.NotStarted = nil
		base, err := PlanBalancer(steady)
		if err != nil {
			t.Fatal(err)
		}
		prefs := Preferences{Clusters: in.Preferences}
		for _, name := range in.Targets {
			p, _ := prefs.For(name)
			n := got.Replicas[name]
			if n < p.MinReplicas || (p.MaxReplicas != nil && n > *p.MaxReplicas) {
				fail("%s has %d outside [min %d, max %v]", name, n, p.MinReplicas, p.MaxReplicas)
			}
			blocked := in.NotStarted[name] > 0
			if n < base.Replicas[name] {
				fail("%s has %d, fewer than %d without any blocked target", name, n, base.Replicas[name])
			}
			if blocked && in.Policy == Proportional && n != base.Replicas[name] {
				fail("blocked %s has %d, want %d: fallback goes only to targets that are not blocked", name, n, base.Replicas[name])
			}
			if got.Overflow[name] > 0 && !blocked {
				fail("overflow on %s, which is not blocked", name)
			}
		}
		checkSteadyBalancer(t, steady, base)

		// One more replica takes none from any target.
		steady.Total++
		more, err := PlanBalancer(steady)
		if err != nil {
			t.Fatal(err)
		}
		for name, n := range base.Replicas {
			if more.Replicas[name] < n {
				t.Fatalf("%+v\n%d replicas give %v, one fewer gave %v", steady, steady.Total, more.Replicas, base.Replicas)
			}
		}
	}
}

// checkSteadyBalancer checks a Balancer plan without blocked targets.
func checkSteadyBalancer(t *testing.T, in BalancerInput, got Result) {
	t.Helper()
	prefs := Preferences{Clusters: in.Preferences}
	var mins, room, sum int64
	open := map[string]bool{}
	for _, name := range in.TargetOrder {
		open[name] = true
	}
	for name, p := range in.Proportions {
		open[name] = p > 0
	}
	var s []share
	var names []string
	for _, name := range in.Targets {
		p, _ := prefs.For(name)
		mins += p.MinReplicas
		sum += got.Replicas[name]
		if !open[name] {
			continue
		}
		if p.MaxReplicas == nil {
			room += 1 << 40
		} else {
			room += *p.MaxReplicas - p.MinReplicas
		}
		sh := share{weight: uint64(in.Proportions[name]), floor: uint64(p.MinReplicas)}
		if p.MaxReplicas != nil {
			sh.capped, sh.cap = true, uint64(*p.MaxReplicas)
		}
		s, names = append(s, sh), append(names, name)
	}
	if want := mins + min(room, max(0, in.Total-mins)); sum != want {
		t.Fatalf("%+v\nplan %v: sum %d, want %d", in, got, sum, want)
	}
	if len(got.Overflow) > 0 {
		t.Fatalf("%+v\nplan %v: overflow without blocked targets", in, got)
	}
	switch in.Policy {
	case Priority:
		// Nobody gets more than its minimum while an earlier target has room.
		for i, name := range in.TargetOrder {
			p, _ := prefs.For(name)
			if got.Replicas[name] == p.MinReplicas {
				continue
			}
			for _, earlier := range in.TargetOrder[:i] {
				q, _ := prefs.For(earlier)
				if q.MaxReplicas == nil || got.Replicas[earlier] < *q.MaxReplicas {
					t.Fatalf("%+v\nplan %v: %s gets more than its minimum while %s, before it, has room", in, got, name, earlier)
				}
			}
		}
	case Proportional:
		if in.Total <= mins || len(s) == 0 {
			return
		}
		for i, e := range exactAmounts(s, uint64(in.Total-mins)) {
			diff := new(big.Rat).Sub(new(big.Rat).SetInt64(got.Replicas[names[i]]), e)
			if diff.Cmp(big.NewRat(1, 1)) >= 0 || diff.Cmp(big.NewRat(-1, 1)) <= 0 {
				t.Fatalf("%+v\nplan %v: %s is more than one replica from its proportional share %s", in, got, names[i], e.FloatString(2))
			}
		}
	}
}
