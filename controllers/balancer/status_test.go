package balancer

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

func TestNextStatus(t *testing.T) {
	withFallback := spec(10, priority(time.Minute, "a", "b"), tgt("a"), tgt("b"))
	balancer := func(conds ...metav1.Condition) *kfedv1alpha1.Balancer {
		b := &kfedv1alpha1.Balancer{Spec: withFallback}
		b.Generation = 3
		b.Status.Conditions = conds
		return b
	}
	cond := func(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: 2}
	}
	notFound := fail(kfedv1alpha1.ReasonTargetNotFound, "reading scales: target \"b\" (Deployment web-b) does not exist")
	observed := []target{
		{Name: "a", Spec: 4, Status: 4, Pods: podCounts{Known: true, Running: 1, Pending: 3, NotStarted: 3}},
		{Name: "b", Spec: 0, Status: 0, Pods: podCounts{Known: true}},
	}
	fallingBack := &decision{Replicas: map[string]int32{"a": 10, "b": 9}, Blocked: []string{"a"}}
	tests := []struct {
		name         string
		b            *kfedv1alpha1.Balancer
		o            outcome
		wantBalanced string // status/reason
		wantFallback string // status/reason, "" when not set
		wantNotices  []string
		wantTargets  string
	}{
		{name: "a first failure is a False condition and a Warning Event",
			b: balancer(), o: outcome{failed: notFound},
			wantBalanced: "False/TargetNotFound", wantNotices: []string{"Warning/TargetNotFound"}},
		{name: "the same failure again sends no Event",
			b: balancer(cond(kfedv1alpha1.BalancerBalanced, metav1.ConditionFalse, kfedv1alpha1.ReasonTargetNotFound,
				notFound.Message+"; targets keep their replicas")),
			o: outcome{failed: notFound}, wantBalanced: "False/TargetNotFound"},
		{name: "a different failure sends an Event",
			b: balancer(cond(kfedv1alpha1.BalancerBalanced, metav1.ConditionFalse, kfedv1alpha1.ReasonInvalidPolicy, "x")),
			o: outcome{failed: notFound}, wantBalanced: "False/TargetNotFound", wantNotices: []string{"Warning/TargetNotFound"}},
		{name: "success after a failure is True without a Warning, and shows the planned counts",
			b:            balancer(cond(kfedv1alpha1.BalancerBalanced, metav1.ConditionFalse, kfedv1alpha1.ReasonTargetNotFound, "x")),
			o:            outcome{targets: observed, plan: &decision{Replicas: map[string]int32{"a": 10, "b": 0}}},
			wantBalanced: "True/TargetsScaled", wantFallback: "False/PodsStarting",
			wantTargets: "a=10 (1 running, 3 pending, 3 not started) b=0 (0 running, 0 pending, 0 not started)"},
		{name: "fallback starting is a True condition and a Warning Event",
			b: balancer(), o: outcome{targets: observed, plan: fallingBack},
			wantBalanced: "True/TargetsScaled", wantFallback: "True/StartupTimeout", wantNotices: []string{"Warning/StartupTimeout"},
			wantTargets: "a=10 (1 running, 3 pending, 3 not started) b=9 (0 running, 0 pending, 0 not started)"},
		{name: "fallback going on sends no Event",
			b: balancer(cond(kfedv1alpha1.BalancerFallback, metav1.ConditionTrue, kfedv1alpha1.ReasonStartupTimeout, "x")),
			o: outcome{targets: observed, plan: fallingBack}, wantBalanced: "True/TargetsScaled", wantFallback: "True/StartupTimeout",
			wantTargets: "a=10 (1 running, 3 pending, 3 not started) b=9 (0 running, 0 pending, 0 not started)"},
		{name: "a failed write keeps the targets' current counts in the status",
			b: balancer(), o: outcome{targets: observed, plan: fallingBack, failed: fail(kfedv1alpha1.ReasonScaleUpdateFailed, "setting counts")},
			wantBalanced: "False/ScaleUpdateFailed", wantFallback: "True/StartupTimeout",
			wantNotices: []string{"Warning/ScaleUpdateFailed", "Warning/StartupTimeout"},
			wantTargets: "a=4 (1 running, 3 pending, 3 not started) b=0 (0 running, 0 pending, 0 not started)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, notices := nextStatus(tt.b, tt.o)
			if st.ObservedGeneration != 3 || st.Selector != "app=web" {
				t.Errorf("observedGeneration %d, selector %q; want 3 and app=web", st.ObservedGeneration, st.Selector)
			}
			show := func(typ string) string {
				c := meta.FindStatusCondition(st.Conditions, typ)
				if c == nil {
					return ""
				}
				if c.ObservedGeneration != 3 {
					t.Errorf("%s has observedGeneration %d, want 3", typ, c.ObservedGeneration)
				}
				return string(c.Status) + "/" + c.Reason
			}
			if got := show(kfedv1alpha1.BalancerBalanced); got != tt.wantBalanced {
				t.Errorf("Balanced = %s, want %s", got, tt.wantBalanced)
			}
			if got := show(kfedv1alpha1.BalancerFallback); got != tt.wantFallback {
				t.Errorf("Fallback = %s, want %s", got, tt.wantFallback)
			}
			var got []string
			for _, n := range notices {
				got = append(got, n.Type+"/"+n.Reason)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.wantNotices) {
				t.Errorf("Events %v, want %v", got, tt.wantNotices)
			}
			var targets string
			for i, ts := range st.Targets {
				if i > 0 {
					targets += " "
				}
				targets += fmt.Sprintf("%s=%d (%d running, %d pending, %d not started)", ts.Name, ts.Replicas, ts.Running, ts.Pending, ts.NotStarted)
			}
			if targets != tt.wantTargets {
				t.Errorf("targets %q, want %q", targets, tt.wantTargets)
			}
			if tt.o.targets != nil && st.Replicas != 4 {
				t.Errorf("status.replicas %d, want the targets' 4", st.Replicas)
			}
		})
	}
}
