package agent

// The heartbeat: a Lease renewed on a fixed interval, which is what makes
// the checker count in a quorum.

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
		if err := a.claimSeat(ctx); err != nil && ctx.Err() == nil {
			a.o.Logger.Error(err, "taking over a stopped checker's seat")
		}
	}, a.o.Heartbeat)
}

func (a *agent) renew(ctx context.Context) error {
	now := metav1.NewMicroTime(time.Now())
	seconds := int32(max(4*a.o.Heartbeat/time.Second, 1))
	var l coordinationv1.Lease
	err := a.c.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: a.o.Checker}, &l)
	if apierrors.IsNotFound(err) {
		l = coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: a.o.Checker, Namespace: a.ns, Labels: map[string]string{
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

// claimSeat frees a seat of this checker's cluster for it when it holds
// none and a checker holding one has stopped: its heartbeat Lease expired
// (renewed longer ago than the duration it gave), or it never had one. So
// a member's replaced agent — a new pod's name after a rollout or a crash
// — takes over its predecessor's vote instead of waiting behind its stale
// report for ever, and a member's votes stay the operator's number,
// whoever casts them (ADR 0013). One seat a heartbeat at most; it touches
// its own member namespace only, the one place it may write.
func (a *agent) claimSeat(ctx context.Context) error {
	counted, over, err := a.seats(ctx)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(over[a.o.Cluster], func(r *kfedv1alpha1.HealthReport) bool { return r.Name == a.o.Checker }) {
		return nil // seated, or its report is not stored yet
	}
	now := time.Now()
	for _, r := range counted {
		if r.Namespace != a.ns || r.Name == a.o.Checker {
			continue
		}
		var l coordinationv1.Lease
		err := a.c.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: r.Name}, &l)
		switch {
		case apierrors.IsNotFound(err):
			if now.Sub(r.CreationTimestamp.Time) < 4*a.o.Heartbeat {
				continue // a checker just started: its first heartbeat is on its way
			}
		case err != nil:
			return fmt.Errorf("reading the heartbeat of %s: %w", r.Name, err)
		case !expired(&l, now):
			continue
		}
		a.o.Logger.Info("taking over the seat of a checker that stopped", "stopped", r.Name, "cluster", a.o.Cluster)
		meta := metav1.ObjectMeta{Name: r.Name, Namespace: a.ns}
		return errors.Join(
			client.IgnoreNotFound(a.c.Delete(ctx, &kfedv1alpha1.HealthReport{ObjectMeta: meta})),
			client.IgnoreNotFound(a.c.Delete(ctx, &coordinationv1.Lease{ObjectMeta: meta})))
	}
	return nil
}

// expired reports whether the Lease l was last renewed longer ago than
// the duration it states, at now.
func expired(l *coordinationv1.Lease, now time.Time) bool {
	t := l.Spec.RenewTime
	if t == nil {
		t = l.Spec.AcquireTime
	}
	if t == nil || l.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return now.Sub(t.Time) > time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second
}
