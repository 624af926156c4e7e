package balancer

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// writer writes in the cluster a Balancer lives in: its targets' scales,
// its status and its Events.
type writer struct {
	c client.Client
	// cluster names the cluster in metrics.
	cluster string
	clock   clock.PassiveClock
	metrics *Metrics
}

// setScales writes each target's /scale where the plan differs from what
// it has, with a Normal Event for each. It stops at the first write that
// fails; targets written before it keep their new count.
func (w writer) setScales(ctx context.Context, b *kfedv1alpha1.Balancer, targets []target, d decision) *failure {
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
		if err := w.c.SubResource("scale").Patch(ctx, obj, patch,
			&client.SubResourcePatchOptions{SubResourceBody: &unstructured.Unstructured{}}); err != nil {
			return fail(kfedv1alpha1.ReasonScaleUpdateFailed, "setting counts: target %q (%s %s) to %d: %v",
				t.Name, t.Ref.Kind, t.Ref.Name, want, err)
		}
		w.metrics.scaleWrite(w.cluster)
		w.event(ctx, b, corev1.EventTypeNormal, "ScaledTarget", "target %s (%s %s) scaled from %d to %d",
			t.Name, t.Ref.Kind, t.Ref.Name, t.Spec, want)
	}
	return nil
}

// event records an Event about b in the cluster b lives in. Events are
// written directly, not through a recorder, because a recorder is bound to
// one cluster and Balancers live in many; they are sent only on changes, so
// nothing needs aggregating.
func (w writer) event(ctx context.Context, b *kfedv1alpha1.Balancer, typ, reason, format string, args ...any) {
	now := metav1.NewTime(w.clock.Now())
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
	if err := w.c.Create(ctx, ev); err != nil {
		// An Event is a courtesy; the status condition carries the same news.
		ctrl.LoggerFrom(ctx).Error(err, "recording Event", "reason", reason)
	}
}

// writeStatus records o in b's status and sends the Events nextStatus asks
// for. It writes nothing when the status is unchanged.
func (w writer) writeStatus(ctx context.Context, b *kfedv1alpha1.Balancer, o outcome) error {
	st, notices := nextStatus(b, o)
	for _, n := range notices {
		w.event(ctx, b, n.Type, n.Reason, "%s", n.Message)
	}
	if equality.Semantic.DeepEqual(st, b.Status) {
		return nil
	}
	patch := client.MergeFrom(b.DeepCopy())
	b.Status = st
	if err := w.c.Status().Patch(ctx, b, patch); err != nil {
		return fmt.Errorf("writing status of Balancer %s/%s: %w", b.Namespace, b.Name, err)
	}
	return nil
}
