package services

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kfed-io/kfed/healthcheck"
	"github.com/kfed-io/kfed/placement"
)

// Annotations and values users put on a control-plane Service.
const (
	// LoadBalancerClass opts a Service in; no cloud controller acts on it.
	LoadBalancerClass = "kfed.io/global"
	// AnnotationFederated: "true" opts in a Service of any class.
	AnnotationFederated = "kfed.io/federated"
	// AnnotationTTL sets the record TTL in seconds.
	AnnotationTTL = "kfed.io/ttl"
	// AnnotationClusters places the Service in the named clusters only
	// (comma-separated).
	AnnotationClusters = placement.AnnotationClusters
	// AnnotationClusterSelector places the Service in clusters whose labels
	// match this label selector; each cluster also has the implicit label
	// kfed.io/region=<its region>.
	AnnotationClusterSelector = placement.AnnotationClusterSelector
)

// maxTTL is a week, the most any provider kfed writes to accepts.
const maxTTL = 604800

// IsFederated reports whether svc opted in to federation.
func IsFederated(svc *corev1.Service) bool {
	if svc.Spec.LoadBalancerClass != nil && *svc.Spec.LoadBalancerClass == LoadBalancerClass {
		return true
	}
	return svc.Annotations[AnnotationFederated] == "true"
}

// config is what a Service's annotations and spec ask of kfed.
type config struct {
	ttl       int64
	placement placement.Placement
	// health holds the Service's kfed.io/health-* annotations, checked; the
	// checkers read them from the DNSEndpoint and fill in their own defaults.
	health map[string]string
}

// parseConfig reads and checks a federated Service's annotations and spec.
// All problems are reported together, so a user fixes them in one go.
func parseConfig(svc *corev1.Service) (config, error) {
	var errs []error
	cfg := config{ttl: DefaultTTL}
	switch {
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		errs = append(errs, errors.New("a Service of type ExternalName cannot be federated: it has no endpoints of its own"))
	case svc.Spec.ClusterIP == corev1.ClusterIPNone:
		errs = append(errs, errors.New("a headless Service (clusterIP: None) cannot be federated yet: give it a load balancer"))
	}
	if len(svc.Spec.Ports) == 0 && svc.Spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, errors.New("the Service has no ports"))
	}
	if v, ok := svc.Annotations[AnnotationTTL]; ok {
		ttl, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("annotation %s=%q: not a whole number of seconds", AnnotationTTL, v))
		case ttl < 1 || ttl > maxTTL:
			errs = append(errs, fmt.Errorf("annotation %s=%q: must be between 1 and %d seconds", AnnotationTTL, v, maxTTL))
		default:
			cfg.ttl = ttl
		}
	}
	p, err := placement.Parse(svc.Annotations)
	if err != nil {
		errs = append(errs, err)
	}
	cfg.placement = p
	for k, v := range svc.Annotations {
		if strings.HasPrefix(k, healthAnnotationPrefix) {
			if cfg.health == nil {
				cfg.health = map[string]string{}
			}
			cfg.health[k] = v
		}
	}
	if _, err := healthcheck.ParseAnnotations(cfg.health, healthcheck.Defaults()); err != nil {
		errs = append(errs, err)
	}
	return cfg, errors.Join(errs...)
}

// healthAnnotationPrefix starts every health-check annotation
// (healthcheck.AnnotationCheck and its siblings).
const healthAnnotationPrefix = "kfed.io/health-"
