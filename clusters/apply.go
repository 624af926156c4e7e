package clusters

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// FieldManager is the field manager kfed writes member objects as, with
// server-side apply: the API server then keeps, per field, who set it, so
// that a label or port the user drops from the federated object goes from
// its copies while what others set on them stays.
const FieldManager = "kfed"

// AnnotationApplied is a hash of what kfed last applied to a member object.
// Member caches keep no managedFields (see memberCacheOptions), so it is
// how kfed knows, without a request, that a copy already holds exactly what
// it wants: the same hash, and every field it sets at the value it sets.
const AnnotationApplied = "kfed.io/applied"

// Apply writes want, a member object as kfed wants it, with server-side
// apply as FieldManager, taking over the fields it sets from whoever set
// them (a copy's fields are the federated object's to say); the API server
// removes those kfed set before and no longer sets, and keeps what others
// set. ac is an empty apply configuration of want's kind (a
// *corev1ac.ServiceApplyConfiguration for a Service); cur is the object as
// the member's cache has it, nil when absent. When cur already holds what
// want says, Apply writes nothing and returns false: a reconcile that
// changes nothing costs no request. After a write, want is the object as
// the API server returned it.
func Apply(ctx context.Context, c client.Client, cur, want client.Object, ac runtime.ApplyConfiguration) (bool, error) {
	u, err := applied(c, want)
	if err != nil {
		return false, err
	}
	if cur != nil && !reflect.ValueOf(cur).IsNil() && cur.GetAnnotations()[AnnotationApplied] == want.GetAnnotations()[AnnotationApplied] {
		have, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
		if err != nil {
			return false, fmt.Errorf("reading %s: %w", cur.GetName(), err)
		}
		if holds(have, u) {
			return false, nil
		}
	}
	b, err := json.Marshal(u)
	if err != nil {
		return false, fmt.Errorf("encoding %s: %w", want.GetName(), err)
	}
	if err := json.Unmarshal(b, ac); err != nil {
		return false, fmt.Errorf("encoding %s as an apply configuration: %w", want.GetName(), err)
	}
	if err := c.Apply(ctx, ac, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return false, err
	}
	if b, err = json.Marshal(ac); err != nil {
		return true, fmt.Errorf("reading back %s: %w", want.GetName(), err)
	}
	reflect.ValueOf(want).Elem().SetZero()
	if err := json.Unmarshal(b, want); err != nil {
		return true, fmt.Errorf("reading back %s: %w", want.GetName(), err)
	}
	return true, nil
}

// applied is want as kfed applies it: its fields less its status (kfed
// never writes a copy's status), stamped with its kind, and with their hash
// in AnnotationApplied (set on want too).
func applied(c client.Client, want client.Object) (map[string]any, error) {
	gvk, err := apiutil.GVKForObject(want, c.Scheme())
	if err != nil {
		return nil, fmt.Errorf("kind of %s: %w", want.GetName(), err)
	}
	annotations := want.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	delete(annotations, AnnotationApplied)
	want.SetAnnotations(annotations)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(want)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", want.GetName(), err)
	}
	delete(u, "status")
	if md, ok := u["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	u["apiVersion"], u["kind"] = gvk.GroupVersion().String(), gvk.Kind
	b, err := json.Marshal(u)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", want.GetName(), err)
	}
	sum := sha256.Sum256(b)
	annotations[AnnotationApplied] = hex.EncodeToString(sum[:8])
	want.SetAnnotations(annotations)
	unstructured.SetNestedField(u, annotations[AnnotationApplied], "metadata", "annotations", AnnotationApplied)
	return u, nil
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
var originField = fieldpath.NewSet(fieldpath.MakePathOrDie("metadata", "annotations", AnnotationOrigin))

// UpgradeOwnership hands the fields of a member object that an earlier kfed
// set with plain updates (the managers that set kfed's origin annotation) to
// FieldManager, so that the first apply removes what kfed set then and no
// longer wants, as later applies do. It is for an object of kfed's that
// holds no AnnotationApplied yet, and reads it from the API server (r):
// caches keep no managedFields.
func UpgradeOwnership(ctx context.Context, r client.Reader, c client.Client, cur client.Object) error {
	if cur.GetAnnotations()[AnnotationApplied] != "" {
		return nil
	}
	live := cur.DeepCopyObject().(client.Object)
	if err := r.Get(ctx, client.ObjectKeyFromObject(cur), live); err != nil {
		return fmt.Errorf("reading %s: %w", cur.GetName(), err)
	}
	managers := sets.New[string]()
	for _, e := range csaupgrade.FindFieldsOwners(live.GetManagedFields(), metav1.ManagedFieldsOperationUpdate, originField) {
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
