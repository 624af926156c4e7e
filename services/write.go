package services

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/healthcheck"
)

// writeEndpoint creates or updates the Service's DNSEndpoint; cur is the
// published one, nil when there is none. An update changes cur in place.
func (c *Controller) writeEndpoint(ctx context.Context, svc *corev1.Service, cur *extdnsv1alpha1.DNSEndpoint, d decision) error {
	want := &extdnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{
			Name: svc.Name, Namespace: svc.Namespace,
			Labels:      dnsendpoint.Selector(c.Federation),
			Annotations: map[string]string{},
		},
		Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: d.endpoints},
	}
	dnsendpoint.SetClusters(want, d.clusters)
	for k, v := range d.health {
		want.Annotations[k] = v
	}
	if d.failover != "" {
		want.Annotations[dnsendpoint.AnnotationFailover] = d.failover
	}
	if d.proximity {
		want.Annotations[dnsendpoint.AnnotationRouting] = dnsendpoint.RoutingProximity
	}
	if err := controllerutil.SetControllerReference(svc, want, c.Fed.Scheme()); err != nil {
		return err
	}
	if cur == nil {
		if err := c.Fed.Create(ctx, want); err != nil {
			return fmt.Errorf("creating DNSEndpoint: %w", err)
		}
		c.Metrics.endpoint("create")
		return nil
	}
	if cur.Labels[kfedv1alpha1.LabelManagedBy] != kfedv1alpha1.ManagedBy {
		return fmt.Errorf("DNSEndpoint %s/%s exists and is not kfed's; not touched", cur.Namespace, cur.Name)
	}
	annotations := kfedAnnotations(cur.Annotations)
	if equality.Semantic.DeepEqual(cur.Spec.Endpoints, d.endpoints) && cur.Labels[kfedv1alpha1.LabelFederation] == c.Federation &&
		maps.Equal(annotations, kfedAnnotations(want.Annotations)) {
		return nil
	}
	cur.Spec.Endpoints = d.endpoints
	cur.Labels[kfedv1alpha1.LabelFederation] = c.Federation
	// kfed's annotations are replaced as a whole; others' are left alone.
	for k := range annotations {
		delete(cur.Annotations, k)
	}
	if len(want.Annotations) > 0 && cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	maps.Copy(cur.Annotations, want.Annotations)
	cur.OwnerReferences = want.OwnerReferences
	if err := c.Fed.Update(ctx, cur); err != nil {
		return fmt.Errorf("updating DNSEndpoint: %w", err)
	}
	c.Metrics.endpoint("update")
	return nil
}

// kfedAnnotations are the annotations of a DNSEndpoint that kfed writes: the
// cluster table, the failover state, the routing and the health settings.
func kfedAnnotations(all map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range all {
		if k == dnsendpoint.AnnotationClusters || k == dnsendpoint.AnnotationFailover || k == dnsendpoint.AnnotationRouting ||
			strings.HasPrefix(k, healthcheck.AnnotationPrefix) {
			out[k] = v
		}
	}
	return out
}

// live is the reader of what the API server holds now.
func (c *Controller) live() client.Reader {
	if c.Live != nil {
		return c.Live
	}
	return c.Fed
}

// finalize removes what kfed made for svc — shards it created, its
// DNSEndpoint — lets go of adopted shards, and drops the finalizer.
func (c *Controller) finalize(ctx context.Context, svc *corev1.Service) error {
	if !controllerutil.ContainsFinalizer(svc, Finalizer) {
		return nil
	}
	key := client.ObjectKeyFromObject(svc)
	if err := c.deleteShards(ctx, key); err != nil {
		return err
	}
	// Read from the API server, not the cache: a DNSEndpoint written just
	// before the Service's deletion may not be in the cache yet, and the
	// finalizer must not go while it exists (it was left behind for the
	// garbage collector, minutes later, under a control plane restart).
	var ep extdnsv1alpha1.DNSEndpoint
	if err := c.live().Get(ctx, key, &ep); err == nil && ep.Labels[kfedv1alpha1.LabelManagedBy] == kfedv1alpha1.ManagedBy {
		if err := c.Fed.Delete(ctx, &ep); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting DNSEndpoint: %w", err)
		}
	} else if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := c.markDeletion(ctx, svc); err != nil {
		return err
	}
	patch := client.MergeFrom(svc.DeepCopy())
	controllerutil.RemoveFinalizer(svc, Finalizer)
	if !IsFederated(svc) && svc.DeletionTimestamp == nil {
		// No longer federated: take back the global hostname and our conditions.
		svc.Status.LoadBalancer.Ingress = slices.DeleteFunc(svc.Status.LoadBalancer.Ingress,
			func(i corev1.LoadBalancerIngress) bool {
				return i.Hostname != "" && strings.HasSuffix(i.Hostname, "."+c.Domain)
			})
		svc.Status.Conditions = slices.DeleteFunc(svc.Status.Conditions,
			func(c metav1.Condition) bool { return strings.HasPrefix(c.Type, "kfed.io/") })
		if err := c.Fed.Status().Patch(ctx, svc, patch); err != nil {
			return err
		}
		patch = client.MergeFrom(svc.DeepCopy())
		controllerutil.RemoveFinalizer(svc, Finalizer)
	}
	if err := c.Fed.Patch(ctx, svc, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer: %w", err)
	}
	return nil
}

// markDeletion writes the federation's serial marker after svc's records
// are gone, so that every CoreDNS replica's SOA serial moves past the
// deletion (ADR 0004). It runs before the finalizer goes, so a crash in
// between retries it; writing the same Service's UID again changes nothing.
func (c *Controller) markDeletion(ctx context.Context, svc *corev1.Service) error {
	return MarkDeletion(ctx, c.Fed, c.namespace(), c.Federation, svc.Namespace+"/"+svc.Name+" "+string(svc.UID))
}

// MarkDeletion writes value (what was deleted, with its UID) on
// federation's serial marker in namespace, kfed's, creating the marker if
// it is missing (ADR 0004). Every writer that deletes one of the
// federation's DNSEndpoints calls it before it forgets the deletion.
func MarkDeletion(ctx context.Context, fed client.Client, namespace, federation, value string) error {
	key := client.ObjectKey{Namespace: namespace, Name: dnsendpoint.SerialMarker(federation)}
	var marker extdnsv1alpha1.DNSEndpoint
	err := fed.Get(ctx, key, &marker)
	if apierrors.IsNotFound(err) {
		marker = extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{
			Namespace: key.Namespace, Name: key.Name,
			Labels:      dnsendpoint.Selector(federation),
			Annotations: map[string]string{dnsendpoint.AnnotationLastDeleted: value},
		}}
		switch err := fed.Create(ctx, &marker); {
		case err == nil, apierrors.IsAlreadyExists(err):
		case apierrors.IsNotFound(err):
			// No kfed namespace yet (no member ever joined): a deletion
			// must not hang on the marker; the serials agree again at the
			// next write.
		default:
			return fmt.Errorf("creating the serial marker %s: %w", key, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the serial marker %s: %w", key, err)
	}
	if marker.Annotations[dnsendpoint.AnnotationLastDeleted] == value {
		return nil
	}
	patch := client.MergeFrom(marker.DeepCopy())
	if marker.Annotations == nil {
		marker.Annotations = map[string]string{}
	}
	marker.Annotations[dnsendpoint.AnnotationLastDeleted] = value
	if err := fed.Patch(ctx, &marker, patch); err != nil {
		return fmt.Errorf("writing the serial marker %s: %w", key, err)
	}
	return nil
}

// deleteShards deletes kfed-created shards of key in every Ready member.
func (c *Controller) deleteShards(ctx context.Context, key types.NamespacedName) error {
	var errs []error
	for _, m := range c.Members.Ready() {
		if err := c.deleteShard(ctx, m, key); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// deleteShard deletes the shard of key in m if kfed created it, and lets go
// of it if kfed adopted it. Anything else is left alone.
func (c *Controller) deleteShard(ctx context.Context, m clusters.Member, key types.NamespacedName) error {
	var cur corev1.Service
	if err := m.Client.Get(ctx, key, &cur); err != nil {
		return client.IgnoreNotFound(err)
	}
	switch clusters.Classify(&cur, key.String(), c.Federation) {
	case clusters.Ours:
		if err := m.Client.Delete(ctx, &cur, client.Preconditions{UID: &cur.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting shard in %s: %w", m.Name, err)
		}
		c.Metrics.shard(m.Name, "delete")
	case clusters.Adopted:
		releaseShard(&cur)
		if err := m.Client.Update(ctx, &cur); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("releasing adopted shard in %s: %w", m.Name, err)
		}
		c.Metrics.shard(m.Name, "release")
	}
	return nil
}
