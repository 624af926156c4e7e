package services

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/publish"
)

// The services controller learns each cluster's ready replicas from the
// federated Deployments' per-cluster tables (publish.WeightsOf); it imports
// nothing of the federated Deployment controller.
//
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch

// observeWeights reads the control-plane Deployments in svc's namespace.
func (c *Controller) observeWeights(ctx context.Context, svc *corev1.Service) (publish.Weights, error) {
	if len(svc.Spec.Selector) == 0 {
		return nil, nil
	}
	var deps appsv1.DeploymentList
	if err := c.Fed.List(ctx, &deps, client.InNamespace(svc.Namespace)); err != nil {
		return nil, fmt.Errorf("listing Deployments for the weights: %w", err)
	}
	return publish.WeightsOf([]map[string]string{svc.Spec.Selector}, deps.Items), nil
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
		if kfedv1alpha1.IsFederated(svc) && len(svc.Spec.Selector) > 0 &&
			labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(svc)})
		}
	}
	return reqs
}
