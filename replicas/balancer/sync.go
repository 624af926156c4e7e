package balancer

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// setScales writes each target's /scale where the plan differs from what
// it has, with a Normal Event for each. It stops at the first write that
// fails; targets written before it keep their new count.
func (r *Reconciler) setScales(ctx context.Context, c client.Client, cluster string, b *kfedv1alpha1.Balancer,
	targets []target, d decision) *failure {
	for _, t := range targets {
		want, ok := d.Replicas[t.Name]
		if !ok || want == t.Spec {
			continue
		}
		obj, err := targetObject(b.Namespace, t.Ref)
		if err != nil {
			return fail(kfedv1alpha1.ReasonScaleUpdateFailed, "setting counts: target %q: %v", t.Name, err)
		}
		patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, want))
		if err := c.SubResource("scale").Patch(ctx, obj, patch,
			&client.SubResourcePatchOptions{SubResourceBody: &unstructured.Unstructured{}}); err != nil {
			return fail(kfedv1alpha1.ReasonScaleUpdateFailed, "setting counts: target %q (%s %s) to %d: %v",
				t.Name, t.Ref.Kind, t.Ref.Name, want, err)
		}
		r.Metrics.scaleWrite(cluster)
		r.event(ctx, c, b, corev1.EventTypeNormal, "ScaledTarget", "target %s (%s %s) scaled from %d to %d",
			t.Name, t.Ref.Kind, t.Ref.Name, t.Spec, want)
	}
	return nil
}

// outcome is what a reconcile found, for the status.
type outcome struct {
	targets []target
	plan    *decision
	failed  *failure
}

// writeStatus records o in b's status, and sends a Warning Event when the
// Balanced condition turns False or changes why. It writes nothing when the
// status is unchanged.
func (r *Reconciler) writeStatus(ctx context.Context, c client.Client, b *kfedv1alpha1.Balancer, o outcome) error {
	st := b.Status.DeepCopy()
	st.ObservedGeneration = b.Generation
	if sel, err := metav1.LabelSelectorAsSelector(&b.Spec.Selector); err == nil {
		st.Selector = sel.String()
	}
	if o.targets != nil {
		st.Replicas = 0
		st.Targets = st.Targets[:0]
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
	prev := meta.FindStatusCondition(b.Status.Conditions, kfedv1alpha1.BalancerBalanced)
	bal := metav1.Condition{Type: kfedv1alpha1.BalancerBalanced, ObservedGeneration: b.Generation,
		Status: metav1.ConditionTrue, Reason: kfedv1alpha1.ReasonTargetsScaled,
		Message: fmt.Sprintf("%d replicas over %d targets", b.Spec.Replicas, len(b.Spec.Targets))}
	if o.failed != nil {
		bal.Status, bal.Reason, bal.Message = metav1.ConditionFalse, o.failed.Reason, o.failed.Message+"; targets keep their replicas"
	}
	meta.SetStatusCondition(&st.Conditions, bal)
	if o.failed != nil && (prev == nil || prev.Status != bal.Status || prev.Reason != bal.Reason || prev.Message != bal.Message) {
		r.event(ctx, c, b, corev1.EventTypeWarning, o.failed.Reason, "%s", bal.Message)
	}
	if o.plan != nil {
		fb := metav1.Condition{Type: kfedv1alpha1.BalancerFallback, ObservedGeneration: b.Generation,
			Status: metav1.ConditionFalse, Reason: kfedv1alpha1.ReasonAllStarted, Message: "no pods pending past the startup timeout"}
		if b.Spec.Policy.Fallback == nil {
			fb.Reason, fb.Message = kfedv1alpha1.ReasonNoFallback, "spec.policy.fallback is not set"
		}
		if msg := o.plan.describe(); msg != "" {
			fb.Status, fb.Reason, fb.Message = metav1.ConditionTrue, kfedv1alpha1.ReasonStartupTimeout, msg
		}
		if !meta.IsStatusConditionTrue(b.Status.Conditions, kfedv1alpha1.BalancerFallback) && fb.Status == metav1.ConditionTrue {
			r.event(ctx, c, b, corev1.EventTypeWarning, kfedv1alpha1.ReasonStartupTimeout, "%s", fb.Message)
		}
		meta.SetStatusCondition(&st.Conditions, fb)
	}
	if equality.Semantic.DeepEqual(*st, b.Status) {
		return nil
	}
	patch := client.MergeFrom(b.DeepCopy())
	b.Status = *st
	if err := c.Status().Patch(ctx, b, patch); err != nil {
		return fmt.Errorf("writing status of Balancer %s/%s: %w", b.Namespace, b.Name, err)
	}
	return nil
}

// event records an Event about b in the cluster b lives in. Events are
// written directly, not through a recorder, because a recorder is bound to
// one cluster and Balancers live in many; they are sent only on changes, so
// nothing needs aggregating.
func (r *Reconciler) event(ctx context.Context, c client.Client, b *kfedv1alpha1.Balancer, typ, reason, format string, args ...any) {
	now := metav1.NewTime(r.now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: b.Namespace,
			Name:      fmt.Sprintf("%s.%x", b.Name, now.UnixNano()),
		},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: kfedv1alpha1.GroupVersion.String(), Kind: "Balancer",
			Namespace: b.Namespace, Name: b.Name, UID: b.UID, ResourceVersion: b.ResourceVersion,
		},
		Type: typ, Reason: reason, Message: fmt.Sprintf(format, args...),
		Source:         corev1.EventSource{Component: "kfed-balancer-controller"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "kfed.io/balancer-controller", ReportingInstance: "kfed-controller",
	}
	if err := c.Create(ctx, ev); err != nil {
		// An Event is a courtesy; the status condition carries the same news.
		r.log(ctx).Error(err, "recording Event", "reason", reason)
	}
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
