package deployments

import (
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/config/deploymentconfig"
)

// IsFederated reports whether d opted in to federation.
func IsFederated(d *appsv1.Deployment) bool {
	_, ok := d.Annotations[kfedv1alpha1.AnnotationReplicaPreferences]
	return ok || d.Annotations[kfedv1alpha1.AnnotationFederated] == "true"
}

// clusterInfo is what placement needs to know of a Ready member.
type clusterInfo struct {
	Name   string
	Region string
	Labels map[string]string
}

// places reports whether cfg places the Deployment in cluster c.
func places(cfg deploymentconfig.Config, c clusterInfo) bool {
	return cfg.Placement.Places(c.Name, c.Region, c.Labels)
}

func isFederated(o client.Object) bool {
	d, ok := o.(*appsv1.Deployment)
	return ok && IsFederated(d)
}
