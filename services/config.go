package services

import (
	"errors"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/placement"
	"github.com/kfed-io/kfed/services/serviceconfig"
)

// Annotations and values users put on a control-plane Service.
const (
	// LoadBalancerClass opts a Service in; no cloud controller acts on it.
	LoadBalancerClass = "kfed.io/global"
	// AnnotationFederated: "true" opts in a Service of any class.
	AnnotationFederated = "kfed.io/federated"
	// AnnotationTTL sets the record TTL in seconds.
	AnnotationTTL = serviceconfig.AnnotationTTL
	// AnnotationClusters places the Service in the named clusters only
	// (comma-separated).
	AnnotationClusters = placement.AnnotationClusters
)

// IsFederated reports whether svc opted in to federation.
func IsFederated(svc *corev1.Service) bool {
	if svc.Spec.LoadBalancerClass != nil && *svc.Spec.LoadBalancerClass == LoadBalancerClass {
		return true
	}
	return svc.Annotations[AnnotationFederated] == "true"
}

func isFederated(o client.Object) bool {
	svc, ok := o.(*corev1.Service)
	return ok && IsFederated(svc)
}

// parseConfig reads and checks a federated Service's spec and annotations
// (serviceconfig.Parse). All problems are reported together, so a user
// fixes them in one go.
func parseConfig(svc *corev1.Service) (serviceconfig.Config, error) {
	var errs []error
	switch {
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		errs = append(errs, errors.New("a Service of type ExternalName cannot be federated: it has no endpoints of its own"))
	case svc.Spec.ClusterIP == corev1.ClusterIPNone:
		errs = append(errs, errors.New("a headless Service (clusterIP: None) cannot be federated yet: give it a load balancer"))
	}
	if len(svc.Spec.Ports) == 0 && svc.Spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, errors.New("the Service has no ports"))
	}
	cfg, err := serviceconfig.Parse(svc.Annotations)
	if err != nil {
		errs = append(errs, err)
	}
	return cfg, errors.Join(errs...)
}
