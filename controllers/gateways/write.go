package gateways

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/dns/publish"
)

// writeEndpoint writes the object's DNSEndpoint (publish.Publisher.Write),
// in kfed's namespace, naming the object it publishes.
// cur is the DNSEndpoint as the cache has it, nil when none.
func (r *reconciler) writeEndpoint(ctx context.Context, obj client.Object, cur *extdnsv1alpha1.DNSEndpoint, d decision) error {
	_, _, err := r.publisher().Write(ctx, cur, publish.Record{
		Key: r.endpointKey(client.ObjectKeyFromObject(obj)), Owner: obj, Origin: r.k.name() + " " + origin(obj),
		Endpoints: d.endpoints, Clusters: d.clusters, Annotations: d.health,
	})
	return err
}

// writeCopies brings obj's copies in every Ready member in line: written
// where the object is placed (kind.sync, which reads back each copy's
// addresses, a hostname address resolved), removed where it is not. What
// each gave goes to o.members, for decide; the error joins the member
// writes to retry with backoff.
func (r *reconciler) writeCopies(ctx context.Context, obj client.Object, o *observation) error {
	var errs []error
	for _, m := range r.Members.Ready() { // one snapshot for the whole reconcile
		if _, ok := o.placed[m.Name]; !ok {
			errs = append(errs, r.k.remove(ctx, m, client.ObjectKeyFromObject(obj), r.Federation))
			continue
		}
		mc, err := r.k.sync(ctx, m, obj, r.Federation)
		errs = append(errs, err)
		if mc.outcome == publish.Serving && mc.hostname != "" {
			mc = r.resolve(ctx, m.Name, mc)
		}
		o.members[m.Name] = mc
	}
	return errors.Join(errs...)
}

// publisher writes the objects' DNSEndpoints.
func (r *reconciler) publisher() publish.Publisher {
	return publish.Publisher{Client: r.Fed, Live: r.Live, Federation: r.Federation, Namespace: r.Namespace}
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
	// Publisher.Delete marks the deletion on the serial marker before the
	// finalizer goes, so that a crash in between retries it.
	if _, err := r.publisher().Delete(ctx, r.endpointKey(key), r.k.name()+" "+key.String(), ""); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
