package services

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/kfed-io/kfed/api/clusterreplicas"
	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
)

// The services controller learns each cluster's ready replicas from the
// federated Deployments' per-cluster tables (api/clusterreplicas), which the
// federated Deployment controller writes in the control plane; it imports
// nothing of that controller.
//
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch

// Weights are a federated object's DNS weight per cluster: the ready
// replicas there of the federated Deployments its pods are selected from.
// nil when it selects none, and every cluster keeps
// dnsendpoint.DefaultWeight. The gateways controller weighs a Gateway or
// Ingress by the same rule, over the Services its routes' backends name.
type Weights map[string]int

// Of is cluster's weight: its entry, 0 for a cluster without one (it runs
// none of the selected replicas), and dnsendpoint.DefaultWeight for every
// cluster when w is nil.
func (w Weights) Of(cluster string) int {
	if w == nil {
		return dnsendpoint.DefaultWeight
	}
	return w[cluster]
}

// WeightsOf sums, for pods selected by any of selectors, each cluster's
// replicas of the federated Deployments (those with a per-cluster table) in
// deps whose pod template one of the selectors matches: a copy's ready
// replicas once it has reported on its template, capped by its plan, and
// its planned replicas until then. A Deployment two selectors match counts
// once: its pods are the same. An empty selector selects nothing (a Service
// without one). A table that cannot be read counts as none.
func WeightsOf(selectors []map[string]string, deps []appsv1.Deployment) Weights {
	var sels []labels.Selector
	for _, s := range selectors {
		if len(s) > 0 {
			sels = append(sels, labels.SelectorFromSet(s))
		}
	}
	if len(sels) == 0 {
		return nil
	}
	var w Weights
	for i := range deps {
		d := &deps[i]
		table, ok, err := clusterreplicas.Read(d.Annotations)
		if !ok || err != nil || !slices.ContainsFunc(sels, func(sel labels.Selector) bool { return sel.Matches(labels.Set(d.Spec.Template.Labels)) }) {
			continue
		}
		if w == nil {
			w = Weights{}
		}
		for cluster, row := range table {
			n := row.Planned
			if row.Reported {
				n = min(row.Ready, row.Planned)
			}
			w[cluster] = min(w[cluster]+int(max(n, 0)), dnsendpoint.MaxWeight)
		}
	}
	return w
}

// weightsOf is WeightsOf for one Service's selector.
func weightsOf(selector map[string]string, deps []appsv1.Deployment) Weights {
	return WeightsOf([]map[string]string{selector}, deps)
}

// weigh sets each shard's weight, w.Of its cluster.
func weigh(w Weights, shards []dnsendpoint.Cluster) {
	for i := range shards {
		shards[i].Weight = w.Of(shards[i].Name)
	}
}

// observeWeights reads the control-plane Deployments in svc's namespace.
func (c *Controller) observeWeights(ctx context.Context, svc *corev1.Service) (Weights, error) {
	if len(svc.Spec.Selector) == 0 {
		return nil, nil
	}
	var deps appsv1.DeploymentList
	if err := c.Fed.List(ctx, &deps, client.InNamespace(svc.Namespace)); err != nil {
		return nil, fmt.Errorf("listing Deployments for the weights: %w", err)
	}
	return weightsOf(svc.Spec.Selector, deps.Items), nil
}

// HasTable passes Deployments that carry a per-cluster table, or carried
// one before an update: only those change weights.
func HasTable() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return tabled(e.Object) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return tabled(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return tabled(e.ObjectOld) || tabled(e.ObjectNew) },
		GenericFunc: func(e event.GenericEvent) bool { return tabled(e.Object) },
	}
}

func tabled(o client.Object) bool {
	_, ok := o.GetAnnotations()[clusterreplicas.Annotation]
	return ok
}

// servicesSelecting returns the federated Services in d's namespace whose
// selector matches d's pod template.
func (c *Controller) servicesSelecting(ctx context.Context, obj client.Object) []ctrl.Request {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return nil
	}
	var list corev1.ServiceList
	if err := c.Fed.List(ctx, &list, client.InNamespace(d.Namespace)); err != nil {
		return nil
	}
	var reqs []ctrl.Request
	for i := range list.Items {
		svc := &list.Items[i]
		if IsFederated(svc) && len(svc.Spec.Selector) > 0 &&
			labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(svc)})
		}
	}
	return reqs
}
