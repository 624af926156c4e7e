package gateways

import (
	"context"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/clusters/copies"
	"github.com/kfed-io/kfed/clusters/registry"
	"github.com/kfed-io/kfed/dns/publish"
)

// origin is what a member copy of obj names as its origin.
func origin(obj client.Object) string { return obj.GetNamespace() + "/" + obj.GetName() }

// copyMeta is the metadata of a member copy of obj: its name, labels, and
// annotations other than kfed's own.
func copyMeta(obj client.Object) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: obj.GetName(), Namespace: obj.GetNamespace(), Labels: map[string]string{}, Annotations: map[string]string{}}
	maps.Copy(m.Labels, obj.GetLabels())
	for k, v := range obj.GetAnnotations() {
		if !strings.HasPrefix(k, "kfed.io/") && k != corev1.LastAppliedConfigAnnotation {
			m.Annotations[k] = v
		}
	}
	return m
}

// getCopy reads the member object at key into into; it returns nil when
// there is none.
func getCopy(ctx context.Context, m registry.Member, key types.NamespacedName, into client.Object) (client.Object, error) {
	err := m.Client.Get(ctx, key, into)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s in %s: %w", key, m.Name, err)
	}
	return into, nil
}

// conflict applies the member-object rule: an object kfed did not make for
// this origin is a conflict, left alone (kfed adopts no Gateway or
// Ingress: its hostnames are the user's, and taking one over would publish
// them). ok is true when kfed may write the copy.
func conflict(m registry.Member, existing client.Object, origin, federation, kind string) (memberCopy, bool) {
	switch copies.Classify(existing, origin, federation) {
	case copies.Absent, copies.Ours:
		return memberCopy{}, true
	case copies.Conflict:
		return memberCopy{outcome: publish.LeftAlone, problem: fmt.Sprintf("cluster %s has a %s %s that another federation or object manages; left alone", m.Name, kind, origin)}, false
	default:
		return memberCopy{outcome: publish.LeftAlone, problem: fmt.Sprintf("cluster %s already has a %s %s that kfed did not create; left alone", m.Name, kind, origin)}, false
	}
}

// removeCopy deletes the member object at key if kfed made it for key.
func removeCopy(ctx context.Context, m registry.Member, key types.NamespacedName, obj client.Object, federation, kind string) error {
	if !m.Watches(obj) {
		return nil
	}
	if err := m.Client.Get(ctx, key, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if copies.Classify(obj, key.String(), federation) != copies.Ours {
		return nil
	}
	uid := obj.GetUID()
	if err := m.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the %s %s in %s: %w", kind, key, m.Name, err)
	}
	return nil
}
