package balancer

import (
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

func spec(replicas int32, policy kfedv1alpha1.BalancerPolicy, targets ...kfedv1alpha1.BalancerTarget) kfedv1alpha1.BalancerSpec {
	return kfedv1alpha1.BalancerSpec{
		Replicas: replicas, Policy: policy, Targets: targets,
		Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
	}
}

func tgt(name string, minMax ...int32) kfedv1alpha1.BalancerTarget {
	t := kfedv1alpha1.BalancerTarget{Name: name, ScaleTargetRef: kfedv1alpha1.CrossVersionObjectReference{
		APIVersion: "apps/v1", Kind: "Deployment", Name: "web-" + name}}
	if len(minMax) > 0 {
		t.MinReplicas = &minMax[0]
	}
	if len(minMax) > 1 {
		t.MaxReplicas = &minMax[1]
	}
	return t
}

func priority(fallback time.Duration, order ...string) kfedv1alpha1.BalancerPolicy {
	p := kfedv1alpha1.BalancerPolicy{PolicyName: kfedv1alpha1.PolicyPriority,
		Priorities: &kfedv1alpha1.PriorityPolicy{TargetOrder: order}}
	if fallback > 0 {
		p.Fallback = &kfedv1alpha1.Fallback{StartupTimeout: metav1.Duration{Duration: fallback}}
	}
	return p
}

func proportional(shares map[string]int32) kfedv1alpha1.BalancerPolicy {
	return kfedv1alpha1.BalancerPolicy{PolicyName: kfedv1alpha1.PolicyProportional,
		Proportions: &kfedv1alpha1.ProportionalPolicy{TargetProportions: shares}}
}

func TestValidateSpec(t *testing.T) {
	tests := []struct {
		name       string
		spec       kfedv1alpha1.BalancerSpec
		wantReason string
		wantText   string
	}{
		{name: "a proportional spec over known targets is valid",
			spec: spec(10, proportional(map[string]int32{"a": 30, "b": 70}), tgt("a"), tgt("b"))},
		{name: "targetOrder naming a missing target is an invalid policy, not a crash",
			spec:       spec(10, priority(0, "a", "c"), tgt("a"), tgt("b")),
			wantReason: kfedv1alpha1.ReasonInvalidPolicy, wantText: `targetOrder[1] names "c"`},
		{name: "proportions for an unknown target are an invalid policy",
			spec:       spec(10, proportional(map[string]int32{"a": 1, "z": 1}), tgt("a"), tgt("b")),
			wantReason: kfedv1alpha1.ReasonInvalidPolicy, wantText: `names "z"`},
		{name: "min above max is an invalid spec",
			spec:       spec(10, priority(0, "a", "b"), tgt("a", 5, 2), tgt("b")),
			wantReason: kfedv1alpha1.ReasonInvalidSpec, wantText: "minReplicas 5 is more than maxReplicas 2"},
		{name: "two targets of one name are an invalid spec",
			spec:       spec(10, priority(0, "a"), tgt("a"), tgt("a")),
			wantReason: kfedv1alpha1.ReasonInvalidSpec, wantText: "used twice"},
		{name: "priority without targetOrder is an invalid policy",
			spec:       spec(10, kfedv1alpha1.BalancerPolicy{PolicyName: kfedv1alpha1.PolicyPriority}, tgt("a")),
			wantReason: kfedv1alpha1.ReasonInvalidPolicy, wantText: "needs priorities.targetOrder"},
		{name: "a target listed twice in targetOrder is refused by the planner",
			spec:       spec(10, priority(0, "a", "a"), tgt("a")),
			wantReason: kfedv1alpha1.ReasonInvalidPolicy, wantText: "listed twice"},
		{name: "an empty selector is an invalid spec",
			spec: func() kfedv1alpha1.BalancerSpec {
				s := spec(1, priority(0, "a"), tgt("a"))
				s.Selector = metav1.LabelSelector{}
				return s
			}(),
			wantReason: kfedv1alpha1.ReasonInvalidSpec, wantText: "selector is empty"},
		{name: "a zero startup timeout is an invalid policy",
			spec: func() kfedv1alpha1.BalancerSpec {
				s := spec(1, priority(0, "a"), tgt("a"))
				s.Policy.Fallback = &kfedv1alpha1.Fallback{}
				return s
			}(),
			wantReason: kfedv1alpha1.ReasonInvalidPolicy, wantText: "startupTimeout must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := validateSpec(&tt.spec)
			if tt.wantReason == "" {
				if f != nil {
					t.Fatalf("validateSpec = %v, want valid", f)
				}
				return
			}
			if f == nil || f.Reason != tt.wantReason || !strings.Contains(f.Message, tt.wantText) {
				t.Fatalf("validateSpec = %v, want %s containing %q", f, tt.wantReason, tt.wantText)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	pods := func(running, pending, notStarted int32) podCounts {
		return podCounts{Known: true, Running: running, Pending: pending, NotStarted: notStarted}
	}
	tests := []struct {
		name        string
		spec        kfedv1alpha1.BalancerSpec
		observed    []target
		want        map[string]int32
		wantBlocked []string
	}{
		{name: "proportional 30/70 at 10 runs 3 and 7",
			spec: spec(10, proportional(map[string]int32{"a": 30, "b": 70}), tgt("a"), tgt("b")),
			want: map[string]int32{"a": 3, "b": 7}},
		{name: "proportional 30/70 scaled to 20 runs 6 and 14",
			spec: spec(20, proportional(map[string]int32{"a": 30, "b": 70}), tgt("a"), tgt("b")),
			want: map[string]int32{"a": 6, "b": 14}},
		{name: "priority fills the first target up to its max",
			spec: spec(10, priority(0, "a", "b"), tgt("a", 0, 4), tgt("b")),
			want: map[string]int32{"a": 4, "b": 6}},
		{name: "minimums are met even above the total",
			spec: spec(1, priority(0, "a", "b"), tgt("a", 2), tgt("b", 3)),
			want: map[string]int32{"a": 2, "b": 3}},
		{name: "pods stuck past the timeout start in the next target",
			spec:        spec(10, priority(time.Minute, "a", "b"), tgt("a"), tgt("b")),
			observed:    []target{{Name: "a", Pods: pods(0, 10, 10)}, {Name: "b", Pods: pods(0, 0, 0)}},
			want:        map[string]int32{"a": 10, "b": 10},
			wantBlocked: []string{"a"}},
		{name: "once the stuck pods start the extra replicas are taken back",
			spec:     spec(10, priority(time.Minute, "a", "b"), tgt("a"), tgt("b")),
			observed: []target{{Name: "a", Pods: pods(10, 0, 0)}, {Name: "b", Pods: pods(10, 0, 0)}},
			want:     map[string]int32{"a": 10, "b": 0}},
		{name: "without fallback stuck pods stay where they are",
			spec:     spec(10, priority(0, "a", "b"), tgt("a"), tgt("b")),
			observed: []target{{Name: "a", Pods: pods(0, 10, 0)}, {Name: "b", Pods: pods(0, 0, 0)}},
			want:     map[string]int32{"a": 10, "b": 0}},
		{name: "proportional fallback goes to the unblocked targets",
			spec: func() kfedv1alpha1.BalancerSpec {
				s := spec(10, proportional(map[string]int32{"a": 1, "b": 1, "c": 2}), tgt("a"), tgt("b"), tgt("c"))
				s.Policy.Fallback = &kfedv1alpha1.Fallback{StartupTimeout: metav1.Duration{Duration: time.Minute}}
				return s
			}(),
			observed: []target{{Name: "a", Pods: pods(0, 3, 3)}, {Name: "b", Pods: pods(2, 0, 0)},
				{Name: "c", Pods: pods(5, 0, 0)}},
			want:        map[string]int32{"a": 3, "b": 3, "c": 7},
			wantBlocked: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if f := validateSpec(&tt.spec); f != nil {
				t.Fatal(f)
			}
			d, f := decide("ns/b", &tt.spec, tt.observed)
			if f != nil {
				t.Fatal(f)
			}
			if !maps.Equal(d.Replicas, tt.want) {
				t.Errorf("replicas = %v, want %v", d.Replicas, tt.want)
			}
			if strings.Join(d.Blocked, ",") != strings.Join(tt.wantBlocked, ",") {
				t.Errorf("blocked = %v, want %v", d.Blocked, tt.wantBlocked)
			}
		})
	}
}

func TestCountPods(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := func(phase corev1.PodPhase, age time.Duration, deleting bool) corev1.Pod {
		p := corev1.Pod{Status: corev1.PodStatus{Phase: phase}}
		p.CreationTimestamp = metav1.NewTime(now.Add(-age))
		if deleting {
			p.DeletionTimestamp = &p.CreationTimestamp
		}
		return p
	}
	tests := []struct {
		name    string
		pods    []corev1.Pod
		timeout time.Duration
		want    podCounts
		wantDue time.Duration
	}{
		{name: "running and pending pods are counted; finished and terminating ones are not",
			pods: []corev1.Pod{pod(corev1.PodRunning, time.Hour, false), pod(corev1.PodPending, time.Second, false),
				pod(corev1.PodSucceeded, time.Hour, false), pod(corev1.PodFailed, time.Hour, false),
				pod(corev1.PodRunning, time.Hour, true)},
			want: podCounts{Known: true, Running: 1, Pending: 1}},
		{name: "a pod pending past the timeout has not started, and the next one is due when it passes",
			pods:    []corev1.Pod{pod(corev1.PodPending, 40*time.Second, false), pod(corev1.PodPending, 10*time.Second, false)},
			timeout: 30 * time.Second,
			want:    podCounts{Known: true, Pending: 2, NotStarted: 1}, wantDue: 20 * time.Second},
		{name: "without a timeout no pod is late",
			pods: []corev1.Pod{pod(corev1.PodPending, time.Hour, false)},
			want: podCounts{Known: true, Pending: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, due := countPods(tt.pods, tt.timeout, now)
			if got != tt.want || due != tt.wantDue {
				t.Fatalf("countPods = %+v, due %v; want %+v, due %v", got, due, tt.want, tt.wantDue)
			}
		})
	}
}
