package gateways

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kfed-io/kfed/dns/publish"
)

// A federated Gateway or Ingress is weighed as a federated Service is
// (publish.WeightsOf): each cluster's weight is its ready replicas of the
// federated Deployments that the control-plane Services its backends name
// select. The backends are:
//   - a Gateway's: the backendRefs of the rules of the HTTPRoutes and
//     GRPCRoutes federated with it; an Ingress's: its default backend and
//     its rules' path backends;
//   - Services only (core group, kind Service), of the object's own
//     namespace: a cross-namespace backendRef is left out, as kfed copies
//     no ReferenceGrant and a namespace's weights are its own Deployments';
//   - a backendRef of weight 0 is left out (it gets no traffic); any other
//     weight counts in full, since it splits each cluster's traffic among
//     backends the same way in every cluster, and so does not say which
//     cluster can take more;
//   - a named Service that is not in the control plane, or that selects no
//     federated Deployment, adds nothing; when none does, every cluster
//     weighs dnsendpoint.DefaultWeight, as a Service that selects none.
//
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch

// routeBackends are the names of the Services of the route's namespace its
// rules send traffic to.
func routeBackends(rt client.Object) []string {
	var refs []gatewayv1.BackendRef
	switch r := rt.(type) {
	case *gatewayv1.HTTPRoute:
		for _, rule := range r.Spec.Rules {
			for _, b := range rule.BackendRefs {
				refs = append(refs, b.BackendRef)
			}
		}
	case *gatewayv1.GRPCRoute:
		for _, rule := range r.Spec.Rules {
			for _, b := range rule.BackendRefs {
				refs = append(refs, b.BackendRef)
			}
		}
	}
	var names []string
	for _, b := range refs {
		switch {
		case b.Group != nil && *b.Group != "",
			b.Kind != nil && *b.Kind != "Service",
			b.Namespace != nil && string(*b.Namespace) != rt.GetNamespace(),
			b.Weight != nil && *b.Weight == 0:
			continue
		}
		names = append(names, string(b.Name))
	}
	return names
}

// ingressBackends are the names of the Services an Ingress sends traffic
// to: its default backend's and its rules' paths'.
func ingressBackends(ing *networkingv1.Ingress) []string {
	var names []string
	if b := ing.Spec.DefaultBackend; b != nil && b.Service != nil {
		names = append(names, b.Service.Name)
	}
	for _, r := range ing.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for _, p := range r.HTTP.Paths {
			if p.Backend.Service != nil {
				names = append(names, p.Backend.Service.Name)
			}
		}
	}
	return names
}

// observeWeights reads the Services obj's backends (of kind k) name and
// the Deployments of its namespace, and weighs the clusters.
func observeWeights(ctx context.Context, fed client.Reader, k kind, obj client.Object) (publish.Weights, error) {
	backends, err := k.backends(ctx, fed, obj)
	if err != nil || len(backends) == 0 {
		return nil, err
	}
	var svcs corev1.ServiceList
	if err := fed.List(ctx, &svcs, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil, fmt.Errorf("listing Services for the weights: %w", err)
	}
	var selectors []map[string]string
	for _, s := range svcs.Items {
		if slices.Contains(backends, s.Name) {
			selectors = append(selectors, s.Spec.Selector)
		}
	}
	if len(selectors) == 0 {
		return nil, nil
	}
	var deps appsv1.DeploymentList
	if err := fed.List(ctx, &deps, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil, fmt.Errorf("listing Deployments for the weights: %w", err)
	}
	return publish.WeightsOf(selectors, deps.Items), nil
}

// backendsNamed are the names a backend gives when obj is behind it: the
// Service obj, or the Services selecting the Deployment obj; none when
// they cannot be read.
func backendsNamed(ctx context.Context, fed client.Reader, obj client.Object) []string {
	var names []string
	switch o := obj.(type) {
	case *corev1.Service:
		names = []string{o.Name}
	case *appsv1.Deployment:
		var svcs corev1.ServiceList
		if err := fed.List(ctx, &svcs, client.InNamespace(o.Namespace)); err != nil {
			return nil
		}
		for _, s := range svcs.Items {
			if len(s.Spec.Selector) > 0 && labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(o.Spec.Template.Labels)) {
				names = append(names, s.Name)
			}
		}
	}
	return names
}

// selectorChanged passes the Service events after which the Deployments it
// selects may differ: creation, deletion, a new selector. A Service's
// status (kfed writes a federated one's) passes not.
var selectorChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Service)
		n, ok2 := e.ObjectNew.(*corev1.Service)
		return !ok1 || !ok2 || !labels.Equals(o.Spec.Selector, n.Spec.Selector)
	},
}
