package services

import (
	"context"
	"fmt"

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

// weights are a Service's DNS weight per cluster: the ready replicas there
// of the federated Deployments it selects. nil when it selects none, and
// every cluster keeps dnsendpoint.DefaultWeight.
type weights map[string]int

// weightsOf sums, for a Service with selector, each cluster's replicas of
// the federated Deployments (those with a per-cluster table) in deps whose
// pod template the selector matches: a copy's ready replicas once it has
// reported on its template, capped by its plan, and its planned replicas
// until then. A Service without a selector selects nothing. A table that
// cannot be read counts as none.
func weightsOf(selector map[string]string, deps []appsv1.Deployment) weights {
	if len(selector) == 0 {
		return nil
	}
	sel := labels.SelectorFromSet(selector)
	var w weights
	for i := range deps {
		d := &deps[i]
		table, ok, err := clusterreplicas.Read(d.Annotations)
		if !ok || err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			continue
		}
		if w == nil {
			w = weights{}
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

// weigh sets each shard's weight: the cluster's entry of w, 0 for a cluster
// without one (it runs none of the selected replicas), and
// dnsendpoint.DefaultWeight for every shard when w is nil.
func weigh(w weights, shards []dnsendpoint.Cluster) {
	for i := range shards {
		if w == nil {
			shards[i].Weight = dnsendpoint.DefaultWeight
		} else {
			shards[i].Weight = w[shards[i].Name]
		}
	}
}

// observeWeights reads the control-plane Deployments in svc's namespace.
func (c *Controller) observeWeights(ctx context.Context, svc *corev1.Service) (weights, error) {
	if len(svc.Spec.Selector) == 0 {
		return nil, nil
	}
	var deps appsv1.DeploymentList
	if err := c.Fed.List(ctx, &deps, client.InNamespace(svc.Namespace)); err != nil {
		return nil, fmt.Errorf("listing Deployments for the weights: %w", err)
	}
	return weightsOf(svc.Spec.Selector, deps.Items), nil
}

// hasTable passes Deployments that carry a per-cluster table, or carried
// one before an update: only those change a Service's weights.
var hasTable = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return tabled(e.Object) },
	DeleteFunc:  func(e event.DeleteEvent) bool { return tabled(e.Object) },
	UpdateFunc:  func(e event.UpdateEvent) bool { return tabled(e.ObjectOld) || tabled(e.ObjectNew) },
	GenericFunc: func(e event.GenericEvent) bool { return tabled(e.Object) },
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
