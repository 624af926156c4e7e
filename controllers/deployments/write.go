package deployments

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/copies"
	"github.com/kfed-io/kfed/clusters/registry"
)

// copyWriter writes the member copies of federated Deployments as kfed of
// federation, counting each write in metrics and telling of it in an Event
// through recorder (none when nil).
type copyWriter struct {
	federation string
	metrics    *Metrics
	recorder   events.EventRecorder
}

// sync decides and writes: it plans d over what obs found (decide, pure)
// and writes the copies (write), those to create first, so that a member
// that refuses one is planned around before any other member is written,
// and the others are not scaled down and up again within one reconcile. A
// refused create is a fact the write observes; sync decides again with it,
// and decide never runs inside write. It returns what happened, for the
// status.
func (w copyWriter) sync(ctx context.Context, d *appsv1.Deployment, obs observation) outcome {
	o := outcome{invalid: obs.invalid, failed: obs.failed, due: obs.due, controlPlaneWorkloads: obs.controlPlaneWorkloads}
	if obs.invalid != nil || obs.failed[""] != "" {
		return o
	}
	in := obs.in
	o.capacity = in.capacity
	o.copies = map[string]*appsv1.Deployment{}
	o.hash = desiredCopy(d, w.federation, 0).Annotations[kfedv1alpha1.AnnotationSpecHash]
	members := slices.Clone(obs.members)
	slices.SortStableFunc(members, func(a, b registry.Member) int {
		return cmpBool(in.copies[b.Name].state == copies.Absent, in.copies[a.Name].state == copies.Absent)
	})
	for {
		plan, err := decide(in)
		if err != nil {
			o.invalid = err
			return o
		}
		refused := w.write(ctx, d, members, plan, obs.existing, in.copies, &o)
		if refused == "" || in.rejected[refused] {
			for name := range o.failed {
				plan.conflicts = slices.DeleteFunc(plan.conflicts, func(s string) bool { return s == name })
			}
			o.plan, o.held = plan, in.held
			return o
		}
		// Retried with backoff; planned elsewhere meanwhile.
		in.rejected[refused] = true
	}
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// write brings every Ready member's copy in line with plan: ensured
// where planned, removed (if kfed's) where not. Members come in the order
// given; it stops at the first member that refuses to create its copy and
// returns its name, so the caller can plan around it before writing the
// rest; "" when none did. Failures are recorded in o.failed, and the copies
// written in o.copies, existing and observed.
func (w copyWriter) write(ctx context.Context, d *appsv1.Deployment, members []registry.Member, plan decision,
	existing map[string]*appsv1.Deployment, observed map[string]observedCopy, o *outcome) string {
	origin := d.Namespace + "/" + d.Name
	for _, m := range members {
		want, planned := plan.replicas[m.Name]
		cur, state := existing[m.Name], observed[m.Name].state
		if !planned {
			if err := w.removeCopy(ctx, m, cur, state, false); err != nil {
				o.failed[m.Name] = err.Error()
			}
			continue
		}
		got, err := w.ensureCopy(ctx, m, d, cur, state, want)
		if err != nil {
			o.failed[m.Name] = err.Error()
			if state == copies.Absent {
				return m.Name
			}
		}
		if got != nil {
			o.copies[m.Name] = got
			existing[m.Name], observed[m.Name] = got, observedCopy{state: copies.Classify(got, origin, w.federation), replicas: want}
		}
	}
	return ""
}

// ensureCopy creates, updates or adopts d's copy in member m with replicas.
// It returns the copy as it now stands, nil when there is none.
func (w copyWriter) ensureCopy(ctx context.Context, m registry.Member, d *appsv1.Deployment,
	cur *appsv1.Deployment, state copies.Standing, replicas int32) (*appsv1.Deployment, error) {
	want := desiredCopy(d, w.federation, replicas)
	switch state {
	case copies.Absent:
		if _, err := copies.WriteCopy(ctx, m, nil, want); err != nil {
			return nil, err
		}
		w.metrics.write(m.Name, "create")
		event(w.recorder, d, corev1.EventTypeNormal, "CopyCreated", "created the copy in cluster %s with %d replicas", m.Name, replicas)
		return want, nil
	case copies.Foreign:
		want.Annotations[kfedv1alpha1.AnnotationAdopted] = "true"
		event(w.recorder, d, corev1.EventTypeNormal, "CopyAdopted", "adopted the Deployment already in cluster %s", m.Name)
		w.metrics.write(m.Name, "adopt")
	case copies.Adopted:
		want.Annotations[kfedv1alpha1.AnnotationAdopted] = "true"
	}
	was := *cur.Spec.Replicas
	changed, err := copies.WriteCopy(ctx, m, cur, want)
	if err != nil {
		return nil, err
	}
	if !changed {
		return cur, nil
	}
	w.metrics.write(m.Name, "update")
	if was != replicas {
		event(w.recorder, d, corev1.EventTypeNormal, "CopyScaled", "scaled the copy in cluster %s from %d to %d replicas", m.Name, was, replicas)
	}
	return want, nil
}

// removeCopy deletes a copy kfed made in member m, or lets go of it (an
// adopted one always; any with orphan). Others are left alone.
func (w copyWriter) removeCopy(ctx context.Context, m registry.Member, cur *appsv1.Deployment, state copies.Standing, orphan bool) error {
	switch {
	case state == copies.Ours && !orphan:
		if err := m.Client.Delete(ctx, cur); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the copy in cluster %s: %w", m.Name, err)
		}
		w.metrics.write(m.Name, "delete")
	case state == copies.Ours || state == copies.Adopted:
		if err := copies.LetGo(ctx, m.Client, cur); err != nil {
			return fmt.Errorf("letting go of the copy in cluster %s: %w", m.Name, err)
		}
		w.metrics.write(m.Name, "release")
	}
	return nil
}
