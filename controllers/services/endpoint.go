package services

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/publish"
)

// writeEndpoint writes the Service's DNSEndpoint (publish.Publisher.Write);
// cur is the published one, nil when there is none. It returns the
// DNSEndpoint as it now is and what the write did.
func (c *Controller) writeEndpoint(ctx context.Context, svc *corev1.Service, cur *extdnsv1alpha1.DNSEndpoint, d decision) (*extdnsv1alpha1.DNSEndpoint, publish.Op, error) {
	annotations := maps.Clone(d.health)
	if annotations == nil {
		annotations = map[string]string{}
	}
	if d.failover != "" {
		annotations[dnsendpoint.AnnotationFailover] = d.failover
	}
	if d.proximity {
		annotations[dnsendpoint.AnnotationRouting] = dnsendpoint.RoutingProximity
	}
	return c.publisher().Write(ctx, cur, publish.Record{
		Key: client.ObjectKeyFromObject(svc), Owner: svc,
		Endpoints: d.endpoints, Clusters: d.clusters, Annotations: annotations,
	})
}

// sweepEndpoint deletes kfed's DNSEndpoint of a Service that is gone. A
// DNSEndpoint outlives its Service when the write of it reaches the API
// server after the Service's finalizer went: a reconcile's apply that timed
// out while the control plane was frozen, and landed once it thawed, after
// the Service was finalized. Its creation brings its owner's key here (the
// controller owns DNSEndpoints), and so does the start of every
// controller. The cache may not have seen a Service made a moment ago, so
// the API server says whether it is gone.
func (c *Controller) sweepEndpoint(ctx context.Context, key types.NamespacedName) error {
	var ep extdnsv1alpha1.DNSEndpoint
	if err := c.Fed.Get(ctx, key, &ep); err != nil {
		return client.IgnoreNotFound(err)
	}
	owner := metav1.GetControllerOf(&ep)
	if ep.Labels[kfedv1alpha1.LabelManagedBy] != kfedv1alpha1.ManagedBy || ep.Labels[kfedv1alpha1.LabelFederation] != c.Federation ||
		owner == nil || owner.APIVersion != "v1" || owner.Kind != "Service" || owner.Name != key.Name {
		return nil // not a Service's of this federation: a Gateway's, an export's, someone else's
	}
	switch err := c.live().Get(ctx, key, &corev1.Service{}); {
	case err == nil:
		return nil // there: its own reconcile follows
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading Service %s: %w", key, err)
	}
	_, err := c.publisher().Delete(ctx, key, "", "")
	return err
}
