package services

import (
	"errors"

	corev1 "k8s.io/api/core/v1"

	"github.com/kfed-io/kfed/config/serviceconfig"
)

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
