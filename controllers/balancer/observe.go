package balancer

import (
	"context"
	"fmt"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// targetObject is the unstructured stub of a target, enough for the client
// to find its resource through the REST mapper: any kind with a /scale.
func targetObject(namespace string, ref kfedv1alpha1.CrossVersionObjectReference) (*unstructured.Unstructured, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gv.WithKind(ref.Kind))
	u.SetNamespace(namespace)
	u.SetName(ref.Name)
	return u, nil
}

// readScales reads every target's /scale. The first target that cannot be
// read stops the reconcile, with a reason saying why.
func readScales(ctx context.Context, c client.Client, b *kfedv1alpha1.Balancer) ([]target, *failure) {
	out := make([]target, 0, len(b.Spec.Targets))
	for _, t := range b.Spec.Targets {
		ref := t.ScaleTargetRef
		what := fmt.Sprintf("target %q (%s %s)", t.Name, ref.Kind, ref.Name)
		obj, err := targetObject(b.Namespace, ref)
		if err != nil {
			return nil, fail(kfedv1alpha1.ReasonTargetKindUnknown, "reading scales: %s: apiVersion %q: %v", what, ref.APIVersion, err)
		}
		u := &unstructured.Unstructured{}
		err = c.SubResource("scale").Get(ctx, obj, u)
		switch {
		case meta.IsNoMatchError(err):
			return nil, fail(kfedv1alpha1.ReasonTargetKindUnknown, "reading scales: %s: kind %s is not served in %s", what, ref.Kind, ref.APIVersion)
		case apierrors.IsNotFound(err):
			// A missing object and a kind without /scale both answer 404;
			// reading the object itself tells them apart.
			switch err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); {
			case err == nil:
				return nil, fail(kfedv1alpha1.ReasonNoScaleSubresource, "reading scales: %s has no scale subresource", what)
			case apierrors.IsNotFound(err):
				return nil, fail(kfedv1alpha1.ReasonTargetNotFound, "reading scales: %s does not exist", what)
			default:
				return nil, fail(kfedv1alpha1.ReasonTargetNotFound, "reading scales: %s was not found or has no scale subresource", what)
			}
		case err != nil:
			return nil, fail(kfedv1alpha1.ReasonScaleReadFailed, "reading scales: %s: %v", what, err)
		}
		var s autoscalingv1.Scale
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
			return nil, fail(kfedv1alpha1.ReasonScaleReadFailed, "reading scales: %s: %v", what, err)
		}
		out = append(out, target{
			Name: t.Name, Ref: ref,
			Spec: s.Spec.Replicas, Status: s.Status.Replicas, Selector: s.Status.Selector,
		})
	}
	return out, nil
}

// countTargetPods counts each target's pods (those its scale's selector
// matches) and checks that spec.selector matches them too. It returns how
// long until the next pending pod passes the startup timeout, 0 if none.
func countTargetPods(ctx context.Context, c client.Reader, b *kfedv1alpha1.Balancer, targets []target, now time.Time) (time.Duration, *failure) {
	sel, err := metav1.LabelSelectorAsSelector(&b.Spec.Selector)
	if err != nil {
		return 0, fail(kfedv1alpha1.ReasonInvalidSpec, "selector: %v", err)
	}
	var timeout time.Duration
	if f := b.Spec.Policy.Fallback; f != nil {
		timeout = f.StartupTimeout.Duration
	}
	var due time.Duration
	for i := range targets {
		t := &targets[i]
		if t.Selector == "" {
			continue // a kind whose scale names no pods: counted by its status
		}
		ts, err := labels.Parse(t.Selector)
		if err != nil {
			return 0, fail(kfedv1alpha1.ReasonPodListFailed, "listing pods: target %q: selector %q: %v", t.Name, t.Selector, err)
		}
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(b.Namespace), client.MatchingLabelsSelector{Selector: ts}); err != nil {
			return 0, fail(kfedv1alpha1.ReasonPodListFailed, "listing pods: target %q: %v", t.Name, err)
		}
		for _, p := range pods.Items {
			if !sel.Matches(labels.Set(p.Labels)) {
				return 0, fail(kfedv1alpha1.ReasonSelectorMismatch,
					"listing pods: pod %s of target %q is not matched by spec.selector %q", p.Name, t.Name, sel)
			}
		}
		counts, d := countPods(pods.Items, timeout, now)
		t.Pods = counts
		if d > 0 && (due == 0 || d < due) {
			due = d
		}
	}
	return due, nil
}

// statusCounts fills the pod counts of targets in a cluster without pods
// from their scales.
func statusCounts(targets []target) {
	for i := range targets {
		targets[i].Pods = podCounts{Running: targets[i].Status}
	}
}
