package clusters

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// Stage is where a federated object stands when a reconcile opens.
type Stage int

const (
	// Live: the object is federated and holds finalizer; reconcile it.
	Live Stage = iota
	// Gone: the object is not in the control plane (deleted without the
	// finalizer, or before it was added); sweep what still points at it.
	Gone
	// Finalizing: the object is being deleted or opted out; clean up and
	// drop the finalizer.
	Finalizing
)

// Open is every federated-object controller's reconcile opening: it reads
// key into obj from fed, says whether the object is Gone, Finalizing (being
// deleted, or no longer federated: kfedv1alpha1.IsFederated) or Live, and adds
// finalizer to a Live object that lacks it, so that its copies in members
// and its records are cleaned up before it goes.
func Open(ctx context.Context, fed client.Client, key client.ObjectKey, obj client.Object, finalizer string) (Stage, error) {
	switch err := fed.Get(ctx, key, obj); {
	case apierrors.IsNotFound(err):
		return Gone, nil
	case err != nil:
		return Live, err
	}
	if obj.GetDeletionTimestamp() != nil || !kfedv1alpha1.IsFederated(obj) {
		return Finalizing, nil
	}
	if !controllerutil.ContainsFinalizer(obj, finalizer) {
		patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
		controllerutil.AddFinalizer(obj, finalizer)
		if err := fed.Patch(ctx, obj, patch); err != nil {
			return Live, fmt.Errorf("adding finalizer: %w", err)
		}
	}
	return Live, nil
}
