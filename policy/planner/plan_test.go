package planner

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// abc is the three-cluster federation of the Federated ReplicaSet scenarios.
var abc = []string{"A", "B", "C"}

func prefs(rebalance bool, entries map[string]ClusterPreferences) Preferences {
	return Preferences{Rebalance: rebalance, Clusters: entries}
}

// TestScenarios runs the seven scenarios of the Federated ReplicaSet design,
// three clusters and 50 replicas, exactly as issue 3 states them.
func TestScenarios(t *testing.T) {
	weight1 := map[string]ClusterPreferences{AnyCluster: {Weight: 1}}
	cMax20 := map[string]ClusterPreferences{AnyCluster: {Weight: 1}, "C": {MaxReplicas: ptr(20), Weight: 1}}
	aHeavy := map[string]ClusterPreferences{"A": {Weight: 1000000}, "B": {Weight: 1}, "C": {Weight: 1}}
	tests := []struct {
		name     string
		in       Input
		want     map[string]int64 // exact, when the scenario names clusters
		wantSome []int64          // the values in some order, when it does not
	}{
		// 1
		{
			name:     "equal weights share 50 as 16/17/17",
			in:       Input{Clusters: abc, Preferences: prefs(true, weight1)},
			wantSome: []int64{16, 17, 17},
		},
		{
			name: "C capacity 6 gives A=22 B=22 C=6",
			in:   Input{Clusters: abc, Preferences: prefs(true, weight1), Capacity: map[string]int64{"C": 6}},
			want: map[string]int64{"A": 22, "B": 22, "C": 6},
		},
		{
			name: "B and C offline gives A=50",
			in:   Input{Clusters: []string{"A"}, Preferences: prefs(true, weight1)},
			want: map[string]int64{"A": 50},
		},
		// 2
		{
			name: "max 2 weight 1 gives 2/2/2, below the total",
			in:   Input{Clusters: abc, Preferences: prefs(true, map[string]ClusterPreferences{AnyCluster: {MaxReplicas: ptr(2), Weight: 1}})},
			want: map[string]int64{"A": 2, "B": 2, "C": 2},
		},
		{
			name: "min 2 weight 0 gives 2/2/2, below the total",
			in:   Input{Clusters: abc, Preferences: prefs(true, map[string]ClusterPreferences{AnyCluster: {MinReplicas: 2}})},
			want: map[string]int64{"A": 2, "B": 2, "C": 2},
		},
		{
			name: "min 2 max 2 gives 2/2/2, below the total",
			in:   Input{Clusters: abc, Preferences: prefs(true, map[string]ClusterPreferences{AnyCluster: {MinReplicas: 2, MaxReplicas: ptr(2)}})},
			want: map[string]int64{"A": 2, "B": 2, "C": 2},
		},
		// 3
		{
			name:     "min 20 weight 0 gives two clusters 20 and one 10",
			in:       Input{Clusters: abc, Preferences: prefs(true, map[string]ClusterPreferences{AnyCluster: {MinReplicas: 20}})},
			wantSome: []int64{10, 20, 20},
		},
		// 4
		{
			name:     "C max 20 with equal weights still gives 16/17/17",
			in:       Input{Clusters: abc, Preferences: prefs(true, cMax20)},
			wantSome: []int64{16, 17, 17},
		},
		{
			name: "C max 20 and B offline gives A=30 C=20",
			in:   Input{Clusters: []string{"A", "C"}, Preferences: prefs(true, cMax20)},
			want: map[string]int64{"A": 30, "C": 20},
		},
		{
			name: "C max 20 and A, B offline gives C=20",
			in:   Input{Clusters: []string{"C"}, Preferences: prefs(true, cMax20)},
			want: map[string]int64{"C": 20},
		},
		// 5
		{
			name: "A weight 1000000 against 1 and 1 takes all 50",
			in:   Input{Clusters: abc, Preferences: prefs(true, aHeavy)},
			want: map[string]int64{"A": 50, "B": 0, "C": 0},
		},
		{
			name: "A weight 1000000 with capacity 40 gives A=40 B=5 C=5",
			in:   Input{Clusters: abc, Preferences: prefs(true, aHeavy), Capacity: map[string]int64{"A": 40}},
			want: map[string]int64{"A": 40, "B": 5, "C": 5},
		},
		// 6 is below: A is exact, B and C split 12/13.
		// 7
		{
			name: "without rebalance A at 20 keeps 20 and B=15 C=15",
			in:   Input{Clusters: abc, Preferences: prefs(false, weight1), Current: map[string]int64{"A": 20}},
			want: map[string]int64{"A": 20, "B": 15, "C": 15},
		},
		{
			name: "without rebalance C capacity 6 and A at 20 gives A=22 B=22 C=6",
			in: Input{Clusters: abc, Preferences: prefs(false, weight1),
				Capacity: map[string]int64{"C": 6}, Current: map[string]int64{"A": 20}},
			want: map[string]int64{"A": 22, "B": 22, "C": 6},
		},
		{
			name: "without rebalance C capacity 6 and A at 30 gives A=30 B=14 C=6",
			in: Input{Clusters: abc, Preferences: prefs(false, weight1),
				Capacity: map[string]int64{"C": 6}, Current: map[string]int64{"A": 30}},
			want: map[string]int64{"A": 30, "B": 14, "C": 6},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Key, tt.in.Total = "default/web", 50
			got, err := Plan(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != nil && !maps.Equal(got.Replicas, tt.want) {
				t.Errorf("replicas %v, want %v", got.Replicas, tt.want)
			}
			if tt.wantSome != nil {
				values := slices.Sorted(maps.Values(got.Replicas))
				if !slices.Equal(values, tt.wantSome) || len(got.Replicas) != len(tt.in.Clusters) {
					t.Errorf("replicas %v, want %v in some order", got.Replicas, tt.wantSome)
				}
			}
			if len(got.Overflow) != 0 {
				t.Errorf("overflow %v, want none", got.Overflow)
			}
		})
	}
}

func TestScenario6WeightTwoGivesAHalfAndBC12And13(t *testing.T) {
	got, err := Plan(Input{Key: "default/web", Total: 50, Clusters: abc, Preferences: prefs(true,
		map[string]ClusterPreferences{"A": {Weight: 2}, "B": {Weight: 1}, "C": {Weight: 1}})})
	if err != nil {
		t.Fatal(err)
	}
	bc := []int64{got.Replicas["B"], got.Replicas["C"]}
	slices.Sort(bc)
	if got.Replicas["A"] != 25 || !slices.Equal(bc, []int64{12, 13}) {
		t.Errorf("replicas %v, want A=25 and B, C 12/13", got.Replicas)
	}
}

func TestPlan(t *testing.T) {
	weight1 := map[string]ClusterPreferences{AnyCluster: {Weight: 1}}
	tests := []struct {
		name         string
		in           Input
		want         map[string]int64
		wantOverflow map[string]int64
	}{
		{
			name: "the kfed plan example gives A=22 B=22 C=6 and no overflow",
			in: Input{Total: 50, Clusters: abc,
				Preferences: prefs(true, map[string]ClusterPreferences{
					AnyCluster: {Weight: 1}, "C": {MaxReplicas: ptr(20), Weight: 1}}),
				Capacity: map[string]int64{"C": 6}, Current: map[string]int64{"A": 20}},
			want: map[string]int64{"A": 22, "B": 22, "C": 6},
		},
		{
			name: "scale-down without rebalance takes only from the cluster above its share: A=10 B=70 gives A=10 B=40",
			in: Input{Total: 50, Clusters: []string{"A", "B"}, Preferences: prefs(false, weight1),
				Current: map[string]int64{"A": 10, "B": 70}},
			want: map[string]int64{"A": 10, "B": 40},
		},
		{
			name: "scale-down without rebalance cuts the furthest above first, down to a common excess",
			in: Input{Total: 30, Clusters: abc, Preferences: prefs(false, weight1),
				Current: map[string]int64{"A": 30, "B": 14, "C": 6}},
			want: map[string]int64{"A": 12, "B": 12, "C": 6}, // shares are 10 each: A and B stay 2 above
		},
		{
			name: "with rebalance current replicas do not matter",
			in: Input{Total: 50, Clusters: abc, Preferences: prefs(true, weight1),
				Capacity: map[string]int64{"C": 6}, Current: map[string]int64{"A": 30}},
			want: map[string]int64{"A": 22, "B": 22, "C": 6},
		},
		{
			name: "without rebalance replicas above max or capacity are not kept",
			in: Input{Total: 50, Clusters: abc,
				Preferences: prefs(false, map[string]ClusterPreferences{AnyCluster: {Weight: 1}, "A": {MaxReplicas: ptr(10), Weight: 1}}),
				Capacity:    map[string]int64{"C": 6}, Current: map[string]int64{"A": 30, "C": 9}},
			want: map[string]int64{"A": 10, "B": 34, "C": 6},
		},
		{
			name: "a cluster without preferences and no \"*\" gets nothing",
			in: Input{Total: 10, Clusters: abc,
				Preferences: prefs(true, map[string]ClusterPreferences{"A": {Weight: 1}, "B": {Weight: 1}})},
			want: map[string]int64{"A": 5, "B": 5, "C": 0},
		},
		{
			name: "replicas no cluster can run are overflow on the capacity-bound cluster, up to its max",
			in: Input{Total: 50, Clusters: abc,
				Preferences: prefs(true, map[string]ClusterPreferences{AnyCluster: {MaxReplicas: ptr(10), Weight: 1}}),
				Capacity:    map[string]int64{"C": 6}},
			want:         map[string]int64{"A": 10, "B": 10, "C": 6},
			wantOverflow: map[string]int64{"C": 4},
		},
		{
			name: "overflow is shared by weight among the capacity-bound clusters",
			in: Input{Total: 40, Clusters: abc,
				Preferences: prefs(true, map[string]ClusterPreferences{AnyCluster: {Weight: 1}, "A": {Weight: 2}}),
				Capacity:    map[string]int64{"A": 4, "B": 3, "C": 3}},
			want:         map[string]int64{"A": 4, "B": 3, "C": 3},
			wantOverflow: map[string]int64{"A": 15, "B": 7, "C": 8}, // 30 by weight 2:1:1
		},
		{
			name: "a minimum capacity cannot hold is overflow",
			in: Input{Total: 20, Clusters: []string{"A"},
				Preferences: prefs(true, map[string]ClusterPreferences{"A": {MinReplicas: 20}}),
				Capacity:    map[string]int64{"A": 5}},
			want:         map[string]int64{"A": 5},
			wantOverflow: map[string]int64{"A": 15},
		},
		{
			name: "no clusters give an empty plan",
			in:   Input{Total: 5, Clusters: []string{}, Preferences: prefs(true, weight1)},
			want: map[string]int64{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Key = "default/web"
			got, err := Plan(tt.in)
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

func TestTiesSpreadObjectsOfOneReplicaOverClusters(t *testing.T) {
	count := map[string]int{}
	for i := range 300 {
		got, err := Plan(Input{Key: fmt.Sprintf("default/app-%d", i), Total: 1, Clusters: abc,
			Preferences: prefs(true, map[string]ClusterPreferences{AnyCluster: {Weight: 1}})})
		if err != nil {
			t.Fatal(err)
		}
		for name, n := range got.Replicas {
			count[name] += int(n)
		}
	}
	for _, name := range abc {
		if count[name] < 60 {
			t.Errorf("cluster %s got %d of 300 one-replica objects, want about 100: %v", name, count[name], count)
		}
	}
}

func TestTiesDependOnKeyNotOnClusterListOrder(t *testing.T) {
	in := Input{Key: "default/web", Total: 50, Clusters: []string{"A", "B", "C"},
		Preferences: prefs(true, map[string]ClusterPreferences{AnyCluster: {Weight: 1}})}
	first, _ := Plan(in)
	in.Clusters = []string{"C", "A", "B"}
	second, _ := Plan(in)
	if !maps.Equal(first.Replicas, second.Replicas) {
		t.Errorf("listing the clusters in another order changed the plan: %v, then %v", first.Replicas, second.Replicas)
	}
}

func TestPlanRejectsInvalidInput(t *testing.T) {
	valid := func() Input {
		return Input{Key: "k", Total: 5, Clusters: []string{"A", "B"},
			Preferences: prefs(true, map[string]ClusterPreferences{AnyCluster: {Weight: 1}})}
	}
	tests := []struct {
		name   string
		change func(*Input)
		want   string
	}{
		{"negative total", func(in *Input) { in.Total = -1 }, "total -1 is negative"},
		{"total above int32", func(in *Input) { in.Total = 1 << 40 }, "total 1099511627776 is above the limit"},
		{"negative minReplicas", func(in *Input) {
			in.Preferences.Clusters["A"] = ClusterPreferences{MinReplicas: -2}
		}, `preferences["A"]: minReplicas -2 is negative`},
		{"max below min", func(in *Input) {
			in.Preferences.Clusters["A"] = ClusterPreferences{MinReplicas: 10, MaxReplicas: ptr(5)}
		}, `preferences["A"]: maxReplicas 5 is less than minReplicas 10`},
		{"negative weight", func(in *Input) {
			in.Preferences.Clusters[AnyCluster] = ClusterPreferences{Weight: -1}
		}, `preferences["*"]: weight -1 is negative`},
		{"weight above the limit", func(in *Input) {
			in.Preferences.Clusters["B"] = ClusterPreferences{Weight: MaxWeight + 1}
		}, `preferences["B"]: weight 1000001 is above the limit of 1000000`},
		{"negative capacity", func(in *Input) { in.Capacity = map[string]int64{"B": -3} }, `capacity["B"] -3 is negative`},
		{"negative current", func(in *Input) { in.Current = map[string]int64{"A": -1} }, `current["A"] -1 is negative`},
		{"cluster listed twice", func(in *Input) { in.Clusters = []string{"A", "B", "A"} }, `clusters[2]: "A" is listed twice`},
		{"empty cluster name", func(in *Input) { in.Clusters = []string{"A", ""} }, `clusters[1]: empty cluster name`},
		{"star as a cluster", func(in *Input) { in.Clusters = []string{"*"} }, `clusters[0]: "*" is not a cluster name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := valid()
			tt.change(&in)
			_, err := Plan(in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if err := in.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate: error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestParsePreferences(t *testing.T) {
	p, err := ParsePreferences([]byte(`{"rebalance": true, "clusters": {"*": {"weight": 1}, "C": {"minReplicas": 1, "maxReplicas": 20, "weight": 2}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Rebalance || *p.Clusters["C"].MaxReplicas != 20 || p.Clusters["C"].Weight != 2 {
		t.Errorf("parsed %+v", p)
	}
	if c, ok := p.For("B"); !ok || c.Weight != 1 {
		t.Errorf(`For("B") = %+v, %v; want the "*" entry`, c, ok)
	}
	for _, tt := range []struct{ in, want string }{
		{`{"clusters": {"A": {"maxReplica": 3}}}`, `clusters["A"]: unknown field "maxReplica"`},
		{`{"Rebalance": true}`, `unknown field "Rebalance"`},
		{`{"clusters": {"A": {"maxReplicas": null, "weight": 1.5}}}`, "want a whole number, got number 1.5"},
		{`{"clusters": {"A": {"minReplicas": 3, "maxReplicas": 1}}}`, `preferences["A"]: maxReplicas 1 is less than minReplicas 3`},
		{`{"clusters": `, "malformed JSON"},
		{`[]`, "want a JSON object, got an array"},
		{`{} {}`, "unexpected data after the JSON object"},
	} {
		if _, err := ParsePreferences([]byte(tt.in)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParsePreferences(%s): error %v, want one containing %q", tt.in, err, tt.want)
		}
	}
}

func TestPlanAtTheLimitsOfTheContract(t *testing.T) {
	big := map[string]ClusterPreferences{"A": {Weight: MaxWeight - 1}, "B": {Weight: MaxWeight}, "C": {Weight: MaxWeight - 2}}
	tests := []struct {
		name string
		in   Input
	}{
		{"the largest total over coprime weights near the limit", Input{Total: MaxReplicas, Clusters: abc, Preferences: prefs(true, big)}},
		{"the largest total with capacities and no rebalance", Input{Total: MaxReplicas, Clusters: abc, Preferences: prefs(false, big),
			Capacity: map[string]int64{"A": MaxReplicas / 3}, Current: map[string]int64{"B": MaxReplicas, "C": 12345}}},
		{"the largest minimums", Input{Total: MaxReplicas, Clusters: abc,
			Preferences: prefs(true, map[string]ClusterPreferences{AnyCluster: {MinReplicas: MaxReplicas, MaxReplicas: ptr(MaxReplicas), Weight: MaxWeight}})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Key = "default/web"
			got := mustPlan(t, tt.in)
			checkPlan(t, tt.in, got)
		})
	}
}
