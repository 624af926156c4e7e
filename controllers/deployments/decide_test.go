package deployments

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/copies"
	"github.com/kfed-io/kfed/config/deploymentconfig"
)

func fedDeployment(annotations map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Annotations: annotations}}
}

func abc(labels ...map[string]string) []clusterInfo {
	out := []clusterInfo{{Name: "a", Region: "us-east1"}, {Name: "b", Region: "us-east1"}, {Name: "c", Region: "europe-west1"}}
	for i := range labels {
		out[i].Labels = labels[i]
	}
	return out
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		total       int32
		copies      map[string]observedCopy
		capacity    map[string]int64
		held        map[string]int32
		rejected    map[string]bool
		want        string // the plan, "a=16 b=17 c=17"
		waiting     string
		conflicts   []string
	}{
		{
			name:        "equal weights over three clusters plan 16, 17 and 17",
			annotations: map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: `{"rebalance": true, "clusters": {"*": {"weight": 1}}}`},
			total:       50, want: multiset(16, 17, 17),
		},
		{
			name:        "federated true spreads evenly",
			annotations: map[string]string{kfedv1alpha1.AnnotationFederated: "true"},
			total:       6, want: "a=2 b=2 c=2",
		},
		{
			name:        "scenario 4: C capped at 20 plans 16, 17, 17",
			annotations: map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: `{"rebalance": true, "clusters": {"*": {"weight": 1}, "c": {"maxReplicas": 20, "weight": 1}}}`},
			total:       50, want: multiset(16, 17, 17),
		},
		{
			name:        "scenario 5: a heavy weight takes everything",
			annotations: map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: `{"rebalance": true, "clusters": {"a": {"weight": 1000000}, "b": {"weight": 1}, "c": {"weight": 1}}}`},
			total:       50, want: "a=50 b=0 c=0",
		},
		{
			name:        "without rebalance running replicas stay (scenario 7)",
			annotations: map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: `{"clusters": {"*": {"weight": 1}}}`},
			total:       50, copies: map[string]observedCopy{"a": {state: copies.Ours, replicas: 20}},
			want: "a=20 b=15 c=15",
		},
		{
			name:        "with rebalance running replicas move to the weighted layout",
			annotations: map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: `{"rebalance": true, "clusters": {"*": {"weight": 1}}}`},
			total:       3, copies: map[string]observedCopy{"a": {state: copies.Ours, replicas: 3}},
			want: "a=1 b=1 c=1",
		},
		{
			name:        "a cluster holding someone else's Deployment is left out and its share goes elsewhere",
			annotations: map[string]string{kfedv1alpha1.AnnotationFederated: "true"},
			total:       4, copies: map[string]observedCopy{"b": {state: copies.Foreign, replicas: 9}},
			want: "a=2 c=2", conflicts: []string{"b"},
		},
		{
			name:        "another federation's copy is a conflict even with adopt-existing",
			annotations: map[string]string{kfedv1alpha1.AnnotationFederated: "true", kfedv1alpha1.AnnotationAdoptExisting: "true"},
			total:       4, copies: map[string]observedCopy{"b": {state: copies.Conflict}},
			want: "a=2 c=2", conflicts: []string{"b"},
		},
		{
			name:        "adopt-existing takes a foreign Deployment into the plan",
			annotations: map[string]string{kfedv1alpha1.AnnotationFederated: "true", kfedv1alpha1.AnnotationAdoptExisting: "true"},
			total:       3, copies: map[string]observedCopy{"b": {state: copies.Foreign, replicas: 9}},
			want: "a=1 b=1 c=1",
		},
		{
			name:        "kfed.io/clusters places it in the named clusters only",
			annotations: map[string]string{kfedv1alpha1.AnnotationFederated: "true", kfedv1alpha1.AnnotationClusters: "a, c"},
			total:       4, want: "a=2 c=2",
		},
		{
			name:        "kfed.io/cluster-selector matches the implicit region label",
			annotations: map[string]string{kfedv1alpha1.AnnotationFederated: "true", kfedv1alpha1.AnnotationClusterSelector: "kfed.io/region=us-east1"},
			total:       4, want: "a=2 b=2",
		},
		{
			name:        "a full cluster runs its capacity, the others take the rest, and two wait where they were",
			annotations: map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: `{"rebalance": true, "clusters": {"*": {"weight": 1}}}`},
			total:       50, capacity: map[string]int64{"b": 10},
			want: "a=20 b=12 c=20", waiting: "b=2",
		},
		{
			name:        "a full cluster one short of its share keeps one waiting",
			annotations: map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: `{"rebalance": true, "clusters": {"*": {"weight": 1}}}`},
			total:       6, capacity: map[string]int64{"b": 1},
			want: "a=3 b=2 c=2", waiting: "b=1",
		},
		{
			name:        "capacity above the share changes nothing",
			annotations: map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: `{"rebalance": true, "clusters": {"*": {"weight": 1}}}`},
			total:       6, capacity: map[string]int64{"b": 5},
			want: "a=2 b=2 c=2",
		},
		{
			name:        "without rebalance a full cluster keeps what it runs and the new replicas go elsewhere",
			annotations: map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: `{"clusters": {"*": {"weight": 1}}}`},
			total:       50, capacity: map[string]int64{"a": 6},
			copies: map[string]observedCopy{"a": {state: copies.Ours, replicas: 17}, "b": {state: copies.Ours, replicas: 17}, "c": {state: copies.Ours, replicas: 16}},
			want:   "a=8 b=22 c=22", waiting: "a=2",
		},
		{
			name:        "an unreachable cluster in its grace period keeps its replicas and the others keep theirs",
			annotations: map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: `{"rebalance": true, "clusters": {"*": {"weight": 1}}}`},
			total:       50, held: map[string]int32{"d": 17},
			want: "a=11 b=11 c=11 d=17",
		},
		{
			name:        "a cluster that refused the copy gets nothing and the others share its part",
			annotations: map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: `{"rebalance": true, "clusters": {"*": {"weight": 1}}}`},
			total:       50, rejected: map[string]bool{"b": true},
			want: "a=25 c=25",
		},
		{
			name:        "a cluster without preferences and no star gets none",
			annotations: map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: `{"clusters": {"a": {"weight": 1}}}`},
			total:       5, want: "a=5 b=0 c=0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := deploymentconfig.Parse(tt.annotations)
			if err != nil {
				t.Fatal(err)
			}
			d, err := decide(planInput{key: "ns/web", total: tt.total, cfg: cfg, ready: abc(), copies: tt.copies,
				capacity: tt.capacity, held: tt.held, rejected: tt.rejected})
			if err != nil {
				t.Fatal(err)
			}
			got := describe(d.replicas)
			if strings.HasPrefix(tt.want, "{") {
				got = multiset(slices.Collect(func(yield func(int32) bool) {
					for _, n := range d.replicas {
						yield(n)
					}
				})...)
			}
			if got != tt.want {
				t.Errorf("plan %s, want %s", got, tt.want)
			}
			if got := describe(d.waiting); got != tt.waiting {
				t.Errorf("waiting %s, want %s", got, tt.waiting)
			}
			if !slices.Equal(d.conflicts, tt.conflicts) {
				t.Errorf("conflicts %v, want %v", d.conflicts, tt.conflicts)
			}
		})
	}
}

func describe(m map[string]int32) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func multiset(ns ...int32) string {
	slices.Sort(ns)
	return fmt.Sprint("{", ns, "}")
}

func TestThresholdIsTheAnnotationsThenTheControllersThenTheDefault(t *testing.T) {
	tests := []struct {
		name       string
		annotated  time.Duration
		controller time.Duration
		want       time.Duration
	}{
		{"neither set", 0, 0, DefaultUnschedulableThreshold},
		{"the controller's", 0, 5 * time.Minute, 5 * time.Minute},
		{"a controller's that is not positive is not used", 0, -time.Second, DefaultUnschedulableThreshold},
		{"the annotation wins", 30 * time.Second, 5 * time.Minute, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := threshold(deploymentconfig.Config{UnschedulableThreshold: tt.annotated}, tt.controller); got != tt.want {
				t.Errorf("threshold %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCapacityOf(t *testing.T) {
	now := time.Date(2026, 11, 22, 17, 0, 0, 0, time.UTC)
	const threshold = time.Minute
	running := podView{scheduled: true, newest: true}
	stuck := podView{newest: true, unschedulableSince: now.Add(-2 * time.Minute)}
	young := podView{newest: true, unschedulableSince: now.Add(-20 * time.Second)}
	tests := []struct {
		name     string
		pods     []podView
		capacity int64
		limited  bool
		due      time.Duration
	}{
		{"every pod scheduled: not full", []podView{running, running}, 0, false, 0},
		{"a pod unschedulable past the threshold: full at what runs", []podView{running, running, stuck}, 2, true, 0},
		{"a pod unschedulable for less: not yet, wake when it crosses", []podView{running, young}, 0, false, 40 * time.Second},
		{"both: full, and the young one is due", []podView{running, stuck, young}, 1, true, 40 * time.Second},
		{"nothing runs: full at 0, never negative", []podView{stuck, stuck}, 0, true, 0},
		{"terminating pods count for nothing", []podView{{scheduled: true, terminating: true}, {terminating: true, newest: true, unschedulableSince: now.Add(-time.Hour)}}, 0, false, 0},
		{"a stuck pod of an older ReplicaSet is not a sign", []podView{running, {unschedulableSince: now.Add(-time.Hour)}}, 0, false, 0},
		{"a pending pod the scheduler has not judged is not a sign", []podView{running, {newest: true}}, 0, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			capacity, limited, due := capacityOf(tt.pods, threshold, now)
			if capacity != tt.capacity || limited != tt.limited || due != tt.due {
				t.Errorf("capacityOf = %d, %v, %v; want %d, %v, %v", capacity, limited, due, tt.capacity, tt.limited, tt.due)
			}
		})
	}
}
