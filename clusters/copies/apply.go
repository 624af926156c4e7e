// Package copies owns the objects kfed writes in member clusters: how kfed
// stands to an object there (made, adopted, foreign, another federation's),
// server-side apply of a copy as field manager kfed, taking over fields
// another manager set, and the member cleanup that removes every kind the
// registry says kfed writes from a member being unjoined.
package copies

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/registry"
)

// FieldManager is the field manager kfed writes member objects as, with
// server-side apply: the API server then keeps, per field, who set it, so
// that a label or port the user drops from the federated object goes from
// its copies while what others set on them stays.
const FieldManager = "kfed"

// Apply writes want, a member object as kfed wants it, with server-side
// apply as FieldManager, taking over the fields it sets from whoever set
// them (a copy's fields are the federated object's to say); the API server
// removes those kfed set before and no longer sets, and keeps what others
// set. cur is the object as the member's cache has it, nil when absent.
// When cur already holds what want says, Apply writes nothing and returns
// false: a reconcile that changes nothing costs no request. After a write,
// want is the object as the API server returned it.
func Apply(ctx context.Context, c client.Client, cur, want client.Object) (bool, error) {
	return apply(ctx, c, cur, want, false)
}

// unborn is a resourceVersion no stored object has: etcd's revisions start
// at 1 and its first write makes 2 (and in any store the first objects
// written are the API server's own bootstrap objects, roles, priority
// classes and namespaces, none of a kind kfed creates this way). An apply
// that carries a resourceVersion is conditional on it (optimistic
// concurrency, as an update is), and one that creates the object has
// nothing to compare it with; so an apply with unborn creates an object or
// fails with a conflict when it exists.
const unborn = "1"

// ApplyNew writes want, an object the caller's cache does not hold, with
// Apply as FieldManager, only if its API server holds none of that name
// either: a cache may not have seen an object made a moment ago, which a
// plain apply would take over. Where one exists, the error is a conflict
// (apierrors.IsConflict). It costs one request, where reading first costs
// two. After the write, want is the object as the API server returned it.
func ApplyNew(ctx context.Context, c client.Client, want client.Object) error {
	_, err := apply(ctx, c, nil, want, true)
	return err
}

// apply is Apply; with create, only when the object does not exist yet
// (unborn).
func apply(ctx context.Context, c client.Client, cur, want client.Object, create bool) (bool, error) {
	u, err := applied(c, want)
	if err != nil {
		return false, err
	}
	if create {
		if err := unstructured.SetNestedField(u, unborn, "metadata", "resourceVersion"); err != nil {
			return false, fmt.Errorf("encoding %s: %w", want.GetName(), err)
		}
	}
	if cur != nil && !reflect.ValueOf(cur).IsNil() && cur.GetAnnotations()[kfedv1alpha1.AnnotationApplied] == want.GetAnnotations()[kfedv1alpha1.AnnotationApplied] {
		have, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
		if err != nil {
			return false, fmt.Errorf("reading %s: %w", cur.GetName(), err)
		}
		// Typed objects read from a cache carry no kind.
		have["apiVersion"], have["kind"] = u["apiVersion"], u["kind"]
		if holds(have, u) {
			return false, nil
		}
	}
	// An apply configuration made from a typed object sets its zero
	// fields too; kfed's copies are whole objects, so those are kfed's to
	// say as well.
	ac := &unstructured.Unstructured{Object: u}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(ac), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return false, err
	}
	reflect.ValueOf(want).Elem().SetZero()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(ac.Object, want); err != nil {
		return true, fmt.Errorf("reading back %s: %w", want.GetName(), err)
	}
	return true, nil
}

// applied is want as kfed applies it: its fields less its status (kfed
// never writes a copy's status), stamped with its kind, and with their hash
// in kfedv1alpha1.AnnotationApplied (set on want too).
func applied(c client.Client, want client.Object) (map[string]any, error) {
	gvk, err := apiutil.GVKForObject(want, c.Scheme())
	if err != nil {
		return nil, fmt.Errorf("kind of %s: %w", want.GetName(), err)
	}
	annotations := want.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	delete(annotations, kfedv1alpha1.AnnotationApplied)
	want.SetAnnotations(annotations)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(want)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", want.GetName(), err)
	}
	delete(u, "status")
	dropNulls(u) // creationTimestamp: null, here and in templates
	u["apiVersion"], u["kind"] = gvk.GroupVersion().String(), gvk.Kind
	b, err := json.Marshal(u)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", want.GetName(), err)
	}
	sum := sha256.Sum256(b)
	annotations[kfedv1alpha1.AnnotationApplied] = hex.EncodeToString(sum[:8])
	want.SetAnnotations(annotations)
	if err := unstructured.SetNestedField(u, annotations[kfedv1alpha1.AnnotationApplied], "metadata", "annotations", kfedv1alpha1.AnnotationApplied); err != nil {
		return nil, fmt.Errorf("encoding %s: %w", want.GetName(), err)
	}
	return u, nil
}

// dropNulls removes the null fields of an object: an apply says only what
// it sets.
func dropNulls(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			dropNulls(v)
		case []any:
			for _, item := range v {
				if im, ok := item.(map[string]any); ok {
					dropNulls(im)
				}
			}
		}
	}
}

// holds reports whether have has every field of want at want's value; a
// list must match item for item.
func holds(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, v := range w {
			if !holds(h[k], v) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return len(w) == 0 && have == nil
		}
		for i := range w {
			if !holds(h[i], w[i]) {
				return false
			}
		}
		return true
	case nil:
		return true
	default:
		return reflect.DeepEqual(have, want)
	}
}

// originField is the field that says an object is kfed's: whoever set it
// with an update was kfed, before it wrote member objects with apply.
var originField = fieldpath.NewSet(fieldpath.MakePathOrDie("metadata", "annotations", kfedv1alpha1.AnnotationOrigin))

// UpgradeOwnership hands the fields of a member object that an earlier kfed
// set with plain updates (the managers that set kfed's origin annotation) to
// FieldManager, so that the first apply removes what kfed set then and no
// longer wants, as later applies do. It is for an object of kfed's that
// holds no kfedv1alpha1.AnnotationApplied yet, and reads it from the API server (r):
// caches keep no managedFields.
func UpgradeOwnership(ctx context.Context, r client.Reader, c client.Client, cur client.Object) error {
	return UpgradeOwnershipBy(ctx, r, c, cur, originField)
}

// UpgradeOwnershipBy is UpgradeOwnership for an object whose field marker
// (any of its paths) says it is kfed's: the managers that set it with an
// update were kfed. A control-plane object kfed writes with Apply (a
// DNSEndpoint) is marked by its managed-by label.
func UpgradeOwnershipBy(ctx context.Context, r client.Reader, c client.Client, cur client.Object, marker *fieldpath.Set) error {
	if cur.GetAnnotations()[kfedv1alpha1.AnnotationApplied] != "" {
		return nil
	}
	live := cur.DeepCopyObject().(client.Object)
	if err := r.Get(ctx, client.ObjectKeyFromObject(cur), live); err != nil {
		return fmt.Errorf("reading %s: %w", cur.GetName(), err)
	}
	managers := sets.New[string]()
	for _, e := range csaupgrade.FindFieldsOwners(live.GetManagedFields(), metav1.ManagedFieldsOperationUpdate, marker) {
		managers.Insert(e.Manager)
	}
	if managers.Len() == 0 {
		return nil
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(live, managers, FieldManager)
	if err != nil || patch == nil {
		return err
	}
	if err := c.Patch(ctx, live, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("handing %s's fields to field manager %s: %w", cur.GetName(), FieldManager, err)
	}
	return nil
}

// ErrNotCached says that a member holds an object its cache has not seen
// yet: the caller should try again once it has.
var ErrNotCached = errors.New("the member has it, and its cache has not seen it yet")

// WriteCopy writes want, the member object kfed wants in m, with Apply;
// cur is the object the member's cache holds, nil when none, and
// kfed's to write (Ours, Adopted, or Foreign being adopted). A copy an older
// kfed wrote with updates is first handed to FieldManager
// (UpgradeOwnership). Where the cache holds none, the apply only creates
// (ApplyNew), and finding one gives ErrNotCached. A missing namespace is
// created. It reports whether it wrote; after a write, want is the object
// as written.
func WriteCopy(ctx context.Context, m registry.Member, cur, want client.Object) (bool, error) {
	key := client.ObjectKeyFromObject(want)
	absent := cur == nil || reflect.ValueOf(cur).IsNil()
	if absent {
		cur = nil
	} else {
		switch Classify(cur, want.GetAnnotations()[kfedv1alpha1.AnnotationOrigin], want.GetLabels()[kfedv1alpha1.LabelFederation]) {
		case Ours, Adopted:
			if err := UpgradeOwnership(ctx, m.Reader, m.Client, cur); err != nil {
				return false, fmt.Errorf("cluster %s: %w", m.Name, err)
			}
		}
	}
	changed, err := apply(ctx, m.Client, cur, want, absent)
	if absent && apierrors.IsNotFound(err) {
		// The namespace is missing in this member: create it and retry.
		// Asking first would cost a request (or a cluster-wide watch) for
		// every copy.
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: key.Namespace,
			Labels: map[string]string{kfedv1alpha1.LabelManagedBy: kfedv1alpha1.ManagedBy}}}
		if nerr := m.Client.Create(ctx, ns); nerr != nil && !apierrors.IsAlreadyExists(nerr) {
			return false, fmt.Errorf("creating namespace %s in cluster %s: %w", key.Namespace, m.Name, nerr)
		}
		changed, err = apply(ctx, m.Client, cur, want, true)
	}
	if absent && apierrors.IsConflict(err) {
		return false, fmt.Errorf("cluster %s, %s: %w", m.Name, key, ErrNotCached)
	}
	if err != nil {
		return false, fmt.Errorf("cluster %s refused %s: %w", m.Name, key, err)
	}
	return changed, nil
}
