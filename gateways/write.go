package gateways

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/healthcheck"
	"github.com/kfed-io/kfed/services"
)

// writeEndpoint creates, updates or deletes the object's DNSEndpoint.
func (r *reconciler) writeEndpoint(ctx context.Context, obj client.Object, d decision) error {
	key := r.endpointKey(client.ObjectKeyFromObject(obj))
	want := &extdnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{
			Name: key.Name, Namespace: key.Namespace,
			Labels:      dnsendpoint.Selector(r.Federation),
			Annotations: map[string]string{AnnotationOrigin: r.k.name() + " " + origin(obj)},
		},
		Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: d.endpoints},
	}
	dnsendpoint.SetClusters(want, d.clusters)
	maps.Copy(want.Annotations, d.health)
	var cur extdnsv1alpha1.DNSEndpoint
	err := r.Fed.Get(ctx, key, &cur)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Fed.Create(ctx, want); err != nil {
			return fmt.Errorf("creating DNSEndpoint %s: %w", key, err)
		}
		return nil
	case err != nil:
		return err
	case cur.Annotations[AnnotationOrigin] != want.Annotations[AnnotationOrigin]:
		return fmt.Errorf("DNSEndpoint %s exists and is not this %s's; not touched", key, r.k.name())
	}
	if equality.Semantic.DeepEqual(cur.Spec.Endpoints, want.Spec.Endpoints) &&
		cur.Annotations[dnsendpoint.AnnotationClusters] == want.Annotations[dnsendpoint.AnnotationClusters] &&
		maps.Equal(healthAnnotations(cur.Annotations), d.health) &&
		cur.Labels[kfedv1alpha1.LabelFederation] == r.Federation {
		return nil
	}
	cur.Spec.Endpoints = want.Spec.Endpoints
	// The health settings are replaced as a whole: one removed from the
	// object leaves the DNSEndpoint too.
	for k := range healthAnnotations(cur.Annotations) {
		delete(cur.Annotations, k)
	}
	if cur.Labels == nil {
		cur.Labels = map[string]string{}
	}
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	maps.Copy(cur.Labels, want.Labels)
	maps.Copy(cur.Annotations, want.Annotations)
	if _, ok := want.Annotations[dnsendpoint.AnnotationClusters]; !ok {
		delete(cur.Annotations, dnsendpoint.AnnotationClusters)
	}
	if err := r.Fed.Update(ctx, &cur); err != nil {
		return fmt.Errorf("updating DNSEndpoint %s: %w", key, err)
	}
	return nil
}

// healthAnnotations are the kfed.io/health-* annotations of all; nil when
// there are none.
func healthAnnotations(all map[string]string) map[string]string {
	var out map[string]string
	for k, v := range all {
		if strings.HasPrefix(k, healthcheck.AnnotationPrefix) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// finalize removes what kfed made for obj — its copies in the Ready
// members and its DNSEndpoint — and drops the finalizer.
func (r *reconciler) finalize(ctx context.Context, obj client.Object) error {
	if !controllerutil.ContainsFinalizer(obj, r.k.finalizer()) {
		return nil
	}
	if err := r.cleanup(ctx, client.ObjectKeyFromObject(obj)); err != nil {
		return err
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	controllerutil.RemoveFinalizer(obj, r.k.finalizer())
	if err := r.Fed.Patch(ctx, obj, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer: %w", err)
	}
	return nil
}

// cleanup deletes the copies of key kfed made in the Ready members and its
// DNSEndpoint.
func (r *reconciler) cleanup(ctx context.Context, key types.NamespacedName) error {
	var errs []error
	for _, m := range r.Members.Ready() {
		errs = append(errs, r.k.remove(ctx, m, key, r.Federation))
	}
	var ep extdnsv1alpha1.DNSEndpoint
	epKey := r.endpointKey(key)
	switch err := r.Fed.Get(ctx, epKey, &ep); {
	case err == nil && ep.Annotations[AnnotationOrigin] == r.k.name()+" "+key.String():
		if err := r.Fed.Delete(ctx, &ep); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting DNSEndpoint %s: %w", epKey, err))
			break
		}
		// Before the finalizer goes, so that a crash in between retries it.
		errs = append(errs, services.MarkDeletion(ctx, r.Fed, r.Namespace, r.Federation, epKey.String()+" "+string(ep.UID)))
	case err != nil && !apierrors.IsNotFound(err):
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
