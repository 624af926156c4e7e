package deployments

import (
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/deployments/deploymentconfig"
)

// Annotations users put on a control-plane Deployment.
const (
	// AnnotationPreferences opts a Deployment in, with the JSON of the
	// Federated ReplicaSet preferences (planner.Preferences).
	AnnotationPreferences = deploymentconfig.AnnotationPreferences
	// AnnotationFederated: "true" opts a Deployment in with an even spread
	// over its clusters.
	AnnotationFederated = deploymentconfig.AnnotationFederated
	// AnnotationAdoptExisting: "true" lets kfed take over a member
	// Deployment of the same name that it did not create. Without it such
	// a Deployment is a conflict and is left alone.
	AnnotationAdoptExisting = deploymentconfig.AnnotationAdoptExisting
)

// IsFederated reports whether d opted in to federation.
func IsFederated(d *appsv1.Deployment) bool {
	_, ok := d.Annotations[AnnotationPreferences]
	return ok || d.Annotations[AnnotationFederated] == "true"
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
