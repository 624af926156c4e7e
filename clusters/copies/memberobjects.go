package copies

import (
	"context"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/registry"
)

// Standing is how kfed stands to an existing member object of a federated
// object's name.
type Standing int

const (
	// Absent: there is none.
	Absent Standing = iota
	// Ours: kfed made it for this origin.
	Ours
	// Adopted: kfed took it over for this origin.
	Adopted
	// Foreign: not kfed's; it may be taken over if the user opts in.
	Foreign
	// Conflict: another federation's, or made for another origin; left
	// alone.
	Conflict
)

func (s Standing) String() string {
	return [...]string{"absent", "ours", "adopted", "foreign", "conflict"}[s]
}

// Classify says how kfed's federation stands to existing (nil, or a nil
// pointer, when there is none) as a member object of origin.
func Classify(existing client.Object, origin, federation string) Standing {
	if existing == nil || reflect.ValueOf(existing).IsNil() {
		return Absent
	}
	labels, annotations := existing.GetLabels(), existing.GetAnnotations()
	if annotations[kfedv1alpha1.AnnotationOrigin] == origin && labels[kfedv1alpha1.LabelFederation] == federation {
		if annotations[kfedv1alpha1.AnnotationAdopted] == "true" {
			return Adopted
		}
		return Ours
	}
	if labels[kfedv1alpha1.LabelFederation] != "" {
		return Conflict
	}
	return Foreign
}

// Mark puts kfed's marks on a member object made from origin.
func Mark(obj client.Object, origin, federation string) {
	labels, annotations := obj.GetLabels(), obj.GetAnnotations()
	if labels == nil {
		labels = map[string]string{}
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	labels[kfedv1alpha1.LabelManagedBy] = kfedv1alpha1.ManagedBy
	labels[kfedv1alpha1.LabelFederation] = federation
	annotations[kfedv1alpha1.AnnotationOrigin] = origin
	obj.SetLabels(labels)
	obj.SetAnnotations(annotations)
}

// Release removes kfed's marks, and every other kfed.io/ annotation (kfed
// copies none of the user's onto member objects), from a member object,
// which is then an ordinary object of its cluster.
func Release(obj client.Object) {
	labels, annotations := obj.GetLabels(), obj.GetAnnotations()
	delete(labels, kfedv1alpha1.LabelManagedBy)
	delete(labels, kfedv1alpha1.LabelFederation)
	for k := range annotations {
		if strings.HasPrefix(k, "kfed.io/") {
			delete(annotations, k)
		}
	}
	obj.SetLabels(labels)
	obj.SetAnnotations(annotations)
}

// LetGo releases obj in the member c reaches, written as a merge patch: a
// member's own controllers keep writing such objects (a Deployment's
// status), and an update would conflict with them until a later reconcile.
// An object already gone is let go of.
func LetGo(ctx context.Context, c client.Client, obj client.Object) error {
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	Release(obj)
	if err := c.Patch(ctx, obj, patch); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// Origin is the control-plane object a member object of federation was made
// from (its kfed.io/origin annotation), and false for any other object.
func Origin(obj client.Object, federation string) (types.NamespacedName, bool) {
	origin := obj.GetAnnotations()[kfedv1alpha1.AnnotationOrigin]
	if origin == "" || obj.GetLabels()[kfedv1alpha1.LabelFederation] != federation {
		return types.NamespacedName{}, false
	}
	ns, name, ok := strings.Cut(origin, "/")
	return types.NamespacedName{Namespace: ns, Name: name}, ok
}

// ToOrigin returns a member-informer callback (for registry.Registry.Watch) that
// sends, for each member object federation's kfed made, a stub of the
// control-plane object it was made from: an empty object from newObj with
// the origin's namespace and name, enough for EnqueueRequestForObject.
func ToOrigin(c *registry.Channel[client.Object], federation string, newObj func() client.Object) func(cluster string, obj client.Object) {
	return func(_ string, obj client.Object) {
		if key, ok := Origin(obj, federation); ok {
			c.Send(registry.Stub(newObj, key))
		}
	}
}
