package publish

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/kfed-io/kfed/api/clusterreplicas"
	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
)

// Publishers learn each cluster's ready replicas from the federated
// Deployments' per-cluster tables (api/clusterreplicas), which the
// federated Deployment controller writes in the control plane; nothing here
// imports that controller.

// Weights are a federated object's DNS weight per cluster: the ready
// replicas there of the federated Deployments its pods are selected from.
// nil when it selects none, and every cluster keeps
// dnsendpoint.DefaultWeight. A Service is weighed by its own selector, a
// Gateway or Ingress by those of the Services its backends name.
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

// Weigh sets each row's weight, w.Of its cluster.
func (w Weights) Weigh(rows []dnsendpoint.Cluster) {
	for i := range rows {
		rows[i].Weight = w.Of(rows[i].Name)
	}
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
