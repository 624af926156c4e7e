package agent

// The heartbeat: a Lease renewed on a fixed interval, which is what makes
// the checker count in a quorum.

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// heartbeats renews the checker's Lease every heartbeat interval, the
// first at once, until ctx ends. The interval runs from one renewal's
// start to the next (non-sliding), so a slow write does not stretch it.
func (a *agent) heartbeats(ctx context.Context) {
	wait.NonSlidingUntilWithContext(ctx, func(ctx context.Context) {
		if a.off.Load() {
			return // retired: no heartbeat
		}
		if err := a.renew(ctx); err != nil && ctx.Err() == nil {
			a.o.Logger.Error(err, "renewing the heartbeat")
		}
	}, a.o.Heartbeat)
}

func (a *agent) renew(ctx context.Context) error {
	now := metav1.NewMicroTime(time.Now())
	seconds := int32(max(4*a.o.Heartbeat/time.Second, 1))
	var l coordinationv1.Lease
	err := a.c.Get(ctx, client.ObjectKey{Namespace: a.o.Namespace, Name: a.o.Checker}, &l)
	if apierrors.IsNotFound(err) {
		l = coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: a.o.Checker, Namespace: a.o.Namespace, Labels: map[string]string{
				kfedv1alpha1.LabelManagedBy: kfedv1alpha1.ManagedBy, kfedv1alpha1.LabelFederation: a.o.Federation,
				kfedv1alpha1.LabelChecker: a.o.Checker, kfedv1alpha1.LabelCluster: a.o.Cluster,
			}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &a.o.Checker, LeaseDurationSeconds: &seconds, AcquireTime: &now, RenewTime: &now},
		}
		return a.c.Create(ctx, &l)
	}
	if err != nil {
		return err
	}
	l.Spec.RenewTime, l.Spec.LeaseDurationSeconds, l.Spec.HolderIdentity = &now, &seconds, &a.o.Checker
	return a.c.Update(ctx, &l)
}
