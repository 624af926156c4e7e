package deployments

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/clusterreplicas"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
)

// writeCopies brings every Ready member's copy in line with plan: ensured
// where planned, removed (if kfed's) where not. Members come in the order
// given; it stops at the first member that refuses to create its copy and
// returns its name, so the caller can plan around it before writing the
// rest; "" when none did. Failures are recorded in o.failed, and the copies
// written in o.copies, existing and copies.
func (c *Controller) writeCopies(ctx context.Context, d *appsv1.Deployment, members []clusters.Member, plan decision,
	existing map[string]*appsv1.Deployment, copies map[string]observedCopy, o *outcome) string {
	origin := d.Namespace + "/" + d.Name
	for _, m := range members {
		want, planned := plan.replicas[m.Name]
		cur, state := existing[m.Name], copies[m.Name].state
		if !planned {
			if err := c.removeCopy(ctx, m, cur, state, false); err != nil {
				o.failed[m.Name] = err.Error()
			}
			continue
		}
		got, err := c.ensureCopy(ctx, m, d, cur, state, want)
		if err != nil {
			o.failed[m.Name] = err.Error()
			if state == copyAbsent {
				return m.Name
			}
		}
		if got != nil {
			o.copies[m.Name] = got
			existing[m.Name], copies[m.Name] = got, observedCopy{state: classify(got, origin, c.Federation), replicas: want}
		}
	}
	return ""
}

// ensureCopy creates, updates or adopts d's copy in member m with replicas.
// It returns the copy as it now stands, nil when there is none.
func (c *Controller) ensureCopy(ctx context.Context, m clusters.Member, d *appsv1.Deployment,
	cur *appsv1.Deployment, state copyState, replicas int32) (*appsv1.Deployment, error) {
	want := desiredCopy(d, c.Federation, replicas)
	switch state {
	case copyAbsent:
		err := m.Client.Create(ctx, want)
		if apierrors.IsNotFound(err) {
			// The namespace is missing in this member: create it and retry.
			if nerr := createNamespace(ctx, m.Client, d.Namespace); nerr != nil {
				return nil, fmt.Errorf("cluster %s: %w", m.Name, nerr)
			}
			err = m.Client.Create(ctx, want)
		}
		if err != nil {
			return nil, fmt.Errorf("cluster %s rejected the copy: %w", m.Name, err)
		}
		c.Metrics.write(m.Name, "create")
		c.event(d, corev1.EventTypeNormal, "CopyCreated", "created the copy in cluster %s with %d replicas", m.Name, replicas)
		return want, nil
	case copyForeign:
		want.Annotations[AnnotationAdopted] = "true"
		c.event(d, corev1.EventTypeNormal, "CopyAdopted", "adopted the Deployment already in cluster %s", m.Name)
		c.Metrics.write(m.Name, "adopt")
	case copyAdopted:
		want.Annotations[AnnotationAdopted] = "true"
	}
	was := *cur.Spec.Replicas
	if !mergeCopy(cur, want) {
		return cur, nil
	}
	if err := m.Client.Update(ctx, cur); err != nil {
		return nil, fmt.Errorf("cluster %s rejected the update of the copy: %w", m.Name, err)
	}
	c.Metrics.write(m.Name, "update")
	if was != replicas {
		c.event(d, corev1.EventTypeNormal, "CopyScaled", "scaled the copy in cluster %s from %d to %d replicas", m.Name, was, replicas)
	}
	return cur, nil
}

// removeCopy deletes a copy kfed made in member m, or lets go of it (an
// adopted one always; any with orphan). Others are left alone.
func (c *Controller) removeCopy(ctx context.Context, m clusters.Member, cur *appsv1.Deployment, state copyState, orphan bool) error {
	switch {
	case state == copyOurs && !orphan:
		if err := m.Client.Delete(ctx, cur); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the copy in cluster %s: %w", m.Name, err)
		}
		c.Metrics.write(m.Name, "delete")
	case state == copyOurs || state == copyAdopted:
		release(cur)
		if err := m.Client.Update(ctx, cur); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("letting go of the copy in cluster %s: %w", m.Name, err)
		}
		c.Metrics.write(m.Name, "release")
	}
	return nil
}

// writeStatus records o in d's status and per-cluster table and sends the
// Events nextStatus asks for. It writes nothing that is unchanged.
func (c *Controller) writeStatus(ctx context.Context, d *appsv1.Deployment, o outcome) error {
	st, table, notices := nextStatus(d, o, c.now())
	for _, n := range notices {
		c.event(d, n.Type, n.Reason, "%s", n.Message)
	}
	if table != nil {
		if enc := clusterreplicas.Encode(table); d.Annotations[clusterreplicas.Annotation] != enc {
			patch := client.MergeFrom(d.DeepCopy())
			if d.Annotations == nil {
				d.Annotations = map[string]string{}
			}
			d.Annotations[clusterreplicas.Annotation] = enc
			if err := c.Fed.Patch(ctx, d, patch); err != nil {
				return fmt.Errorf("writing the per-cluster table of Deployment %s/%s: %w", d.Namespace, d.Name, err)
			}
		}
	}
	if equality.Semantic.DeepEqual(st, d.Status) {
		return nil
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Status = st
	if err := c.Fed.Status().Patch(ctx, d, patch); err != nil {
		return fmt.Errorf("writing status of Deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	return nil
}

func createNamespace(ctx context.Context, c client.Client, name string) error {
	ns := corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kfedv1alpha1.LabelManagedBy: kfedv1alpha1.ManagedBy}}}
	if err := c.Create(ctx, &ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}
