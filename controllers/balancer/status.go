package balancer

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// outcome is what a reconcile found and did, for the status.
type outcome struct {
	// targets as observed; nil when the reconcile stopped before reading
	// them (the status then keeps the targets it had).
	targets []target
	plan    *decision
	failed  *failure
}

// notice is an Event to record about the Balancer.
type notice struct{ Type, Reason, Message string }

// nextStatus is b's status after o, and the Events the change calls for: a
// Warning when Balanced turns False or changes why, and one when fallback
// starts. Repeating a failure sends nothing, so retries do not flood the
// Events.
func nextStatus(b *kfedv1alpha1.Balancer, o outcome) (kfedv1alpha1.BalancerStatus, []notice) {
	st := *b.Status.DeepCopy()
	st.ObservedGeneration = b.Generation
	if sel, err := metav1.LabelSelectorAsSelector(&b.Spec.Selector); err == nil {
		st.Selector = sel.String()
	}
	if o.targets != nil {
		st.Replicas = 0
		st.Targets = nil
		for _, t := range o.targets {
			st.Replicas += t.Status
			want := t.Spec
			if o.plan != nil && o.failed == nil {
				want = o.plan.Replicas[t.Name]
			}
			st.Targets = append(st.Targets, kfedv1alpha1.BalancerTargetStatus{
				Name: t.Name, Replicas: want,
				Running: t.Pods.Running, Pending: t.Pods.Pending, NotStarted: t.Pods.NotStarted,
			})
		}
	}
	var notices []notice
	prev := meta.FindStatusCondition(b.Status.Conditions, kfedv1alpha1.BalancerBalanced)
	bal := metav1.Condition{Type: kfedv1alpha1.BalancerBalanced, ObservedGeneration: b.Generation,
		Status: metav1.ConditionTrue, Reason: kfedv1alpha1.ReasonTargetsScaled,
		Message: fmt.Sprintf("%d replicas over %d targets", b.Spec.Replicas, len(b.Spec.Targets))}
	if o.failed != nil {
		bal.Status, bal.Reason, bal.Message = metav1.ConditionFalse, o.failed.Reason, o.failed.Message+"; targets keep their replicas"
		if prev == nil || prev.Status != bal.Status || prev.Reason != bal.Reason || prev.Message != bal.Message {
			notices = append(notices, notice{corev1.EventTypeWarning, bal.Reason, bal.Message})
		}
	}
	meta.SetStatusCondition(&st.Conditions, bal)
	if o.plan != nil {
		fb := metav1.Condition{Type: kfedv1alpha1.BalancerFallback, ObservedGeneration: b.Generation,
			Status: metav1.ConditionFalse, Reason: kfedv1alpha1.ReasonAllStarted, Message: "no pods pending past the startup timeout"}
		if b.Spec.Policy.Fallback == nil {
			fb.Reason, fb.Message = kfedv1alpha1.ReasonNoFallback, "spec.policy.fallback is not set"
		}
		if msg := o.plan.describe(); msg != "" {
			fb.Status, fb.Reason, fb.Message = metav1.ConditionTrue, kfedv1alpha1.ReasonStartupTimeout, msg
			if !meta.IsStatusConditionTrue(b.Status.Conditions, kfedv1alpha1.BalancerFallback) {
				notices = append(notices, notice{corev1.EventTypeWarning, fb.Reason, fb.Message})
			}
		}
		meta.SetStatusCondition(&st.Conditions, fb)
	}
	return st, notices
}
